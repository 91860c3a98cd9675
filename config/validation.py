from rest_framework.exceptions import ValidationError


def validated(serializer_class, request) -> dict:
    """The request body checked by an input serializer; ValidationError (400) for any other shape."""
    if not isinstance(request.data, dict):  # a multipart QueryDict is a dict too
        raise ValidationError({"non_field_errors": ["Expected a JSON object."]})
    serializer = serializer_class(data=request.data)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


def validated_query(serializer_class, request) -> dict:
    """The query string checked by an input serializer; ValidationError (400) for bad values."""
    serializer = serializer_class(data=request.query_params)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)
