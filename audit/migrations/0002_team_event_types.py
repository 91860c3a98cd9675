# The team event types (team.invite_sent, ...) and room for their longer names.

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('audit', '0001_initial'),
    ]

    operations = [
        migrations.AlterField(
            model_name='auditevent',
            name='type',
            field=models.CharField(choices=[('sign', 'Sign'), ('verify', 'Verify'), ('key_created', 'Key Created'), ('key_revoked', 'Key Revoked'), ('team.invite_sent', 'Team Invite Sent'), ('team.invite_accepted', 'Team Invite Accepted'), ('team.invite_cancelled', 'Team Invite Cancelled'), ('team.role_changed', 'Team Role Changed'), ('team.member_removed', 'Team Member Removed')], max_length=40),
        ),
    ]
