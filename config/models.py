"""Tables of the shared infrastructure."""

from django.db import models


class RateCounter(models.Model):
    """The current fixed window of one rate-limited subject, when no Redis is configured.

    One row per subject (not per window): the increment is a single upsert that restarts the count
    when a later window begins, so the table grows with subjects, not with minutes. Rows of subjects
    that went quiet are deleted by `manage.py purge_expired`.
    """

    subject = models.CharField(max_length=200, unique=True)
    window_end = models.BigIntegerField(db_index=True)  # Unix time the current window closes
    hits = models.BigIntegerField()

    class Meta:
        db_table = "config_ratecounter"  # named in config/ratelimit.py's upsert

    def __str__(self) -> str:
        return f"{self.subject}: {self.hits} until {self.window_end}"
