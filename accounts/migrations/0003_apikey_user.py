# Personal API keys (team routes): an ApiKey with `user` set belongs to that member.

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('accounts', '0002_blockedsessiontoken'),
    ]

    operations = [
        migrations.AddField(
            model_name='apikey',
            name='user',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='personal_api_keys', to=settings.AUTH_USER_MODEL),
        ),
    ]
