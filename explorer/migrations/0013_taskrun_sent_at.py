from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('explorer', '0012_policy_last_run_derived'),
    ]

    operations = [
        migrations.AddField(
            model_name='taskrun',
            name='sent_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]
