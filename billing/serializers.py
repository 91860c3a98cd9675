from rest_framework import serializers


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
