"""A flow through a client generated from docs/openapi.json by openapi-python-client, against a
live `kairos serve` (crates/cli/tests/openapi_client.rs runs it). The enums it imports exist only
because the document types closed sets as enums; a stale or loose document fails here."""
import os
import sys

from kairos_client import AuthenticatedClient
from kairos_client.api.jobs import jobs_cancel, jobs_enqueue, jobs_list, jobs_show
from kairos_client.api.schedules import schedules_create, schedules_show
from kairos_client.models.job_body import JobBody
from kairos_client.models.job_body_payload_type_0 import JobBodyPayloadType0
from kairos_client.models.job_kind import JobKind
from kairos_client.models.job_page import JobPage
from kairos_client.models.job_state import JobState
from kairos_client.models.job_view import JobView
from kairos_client.models.overlap import Overlap
from kairos_client.models.period import Period
from kairos_client.models.schedule_body import ScheduleBody
from kairos_client.models.schedule_state import ScheduleState
from kairos_client.models.schedule_view import ScheduleView
from kairos_client.models.webhook_body import WebhookBody

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
client = AuthenticatedClient(
    base_url=os.environ["KAIROS_URL"],
    token=os.environ["KAIROS_API_TOKEN"],
    raise_on_unexpected_status=True,
)
hook = WebhookBody(url=os.environ["APP_URL"] + "/hook", secret=SECRET)


def expect(kind, value):
    if not isinstance(value, kind):
        sys.exit(f"expected a {kind.__name__}, got {value!r}")
    return value


# Create a job (kind an enum), get it back, list jobs by an enum state.
job = expect(JobView, jobs_enqueue.sync(client=client, body=JobBody(
    kind=JobKind.WEBHOOK, webhook=hook,
    payload=JobBodyPayloadType0.from_dict({"order": 42}),
    run_at="2030-01-01T09:00:00Z", idempotency_key="generated-client-42")))
assert job.kind == JobKind.WEBHOOK and job.state == JobState.AVAILABLE, job
got = expect(JobView, jobs_show.sync(job.id, client=client))
assert got.id == job.id and got.state is JobState.AVAILABLE, got
page = expect(JobPage, jobs_list.sync(client=client, state=JobState.AVAILABLE, kind="webhook"))
assert job.id in [j.id for j in page.data], page
none_dead = expect(JobPage, jobs_list.sync(client=client, state=JobState.DEAD))
assert job.id not in [j.id for j in none_dead.data], none_dead

# Create a schedule with the period alias, a misfire pattern value and an overlap enum; read it back.
created = expect(ScheduleView, schedules_create.sync(client=client, body=ScheduleBody(
    name="generated-client", cron="0 9 * * 1", timezone="Asia/Tokyo", kind=JobKind.WEBHOOK,
    webhook=hook, period=Period.ISO_WEEK, misfire="all:3", overlap=Overlap.SKIP)))
back = expect(ScheduleView, schedules_show.sync(created.id, client=client))
assert back.period == Period.WEEK, back.period  # iso_week is shown as week
assert back.misfire == "all:3" and back.overlap == Overlap.SKIP, back
assert back.state == ScheduleState.ACTIVE and back.kind == JobKind.WEBHOOK, back

# The cancel body is optional: the generated call works without one.
cancelled = expect(JobView, jobs_cancel.sync(job.id, client=client))
assert cancelled.state == JobState.CANCELLED, cancelled
print("generated client flow: ok")
