from core.validation import serializers


class PlanOutput(serializers.Serializer):
    plan = serializers.CharField(source="name")
    label = serializers.CharField()
    monthly_price = serializers.FloatField()
    annual_monthly_price = serializers.FloatField()
    annual_total = serializers.FloatField()
    included_signatures = serializers.IntegerField(allow_null=True)
    overage_rate = serializers.FloatField()
    max_members = serializers.IntegerField(allow_null=True)
    upgrade_url = serializers.CharField()


class PlanListOutput(serializers.Serializer):
    plans = PlanOutput(many=True)


class UsageOutput(serializers.Serializer):
    plan = serializers.CharField()
    billing_interval = serializers.CharField()
    signatures_used = serializers.IntegerField()
    signatures_included = serializers.IntegerField(allow_null=True)
    overage_rate = serializers.FloatField()
    overage_count = serializers.IntegerField()
    period_start = serializers.DateTimeField()
    period_end = serializers.DateTimeField()
