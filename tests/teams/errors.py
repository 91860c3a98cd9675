def assert_error(response, status: int, code: str) -> None:
    """The response is the error envelope with this status and code."""
    assert response.status_code == status, response.content[:300]
    body = response.json()
    assert body["error"] == code and body["message"], body
