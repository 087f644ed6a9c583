#!/usr/bin/env python3
"""Writes the seed corpora (fuzz/seeds/<target>/) from the values the tests use.

Run from fuzz/: `python3 seeds/make.py`. The files are committed; this script documents where
they come from and regenerates them.
"""
import hashlib, json, os

here = os.path.dirname(os.path.abspath(__file__))

def write(target, items):
    d = os.path.join(here, target)
    os.makedirs(d, exist_ok=True)
    for item in items:
        data = item.encode() if isinstance(item, str) else item
        name = hashlib.sha1(data).hexdigest()[:16]
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)

# crates/core/src/schedule/tests.rs
crons = ["* * * * * *", "*/10 * * * * *", "*/5 * * * *", "0 * * * *", "0 6 * * *", "0 9 * * *",
         "15 2 * * *", "30 * * * *", "30 1 * * *", "30 2 * * *", "45 1 * * *", "5-59/5 * * * *",
         "5/5 * * * *", "@daily", "@midnight", "@hourly", "@weekly", "@monthly", "@yearly",
         "not a cron", "0 0 30 2 *", "0 1,13 * * *", "0,30 2 * * *", "0 9 * * MON-FRI",
         "0 0 L * *", "0 0 * * 5#3", "0 0 29 2 *", "*/15 2 * * *", "0 0 1 1 * 2030"]
zones = ["America/New_York", "Australia/Lord_Howe", "Asia/Tokyo", "Europe/Berlin", "UTC",
         "Pacific/Kiritimati", "Pacific/Apia", "Not/AZone"]
instants = ["2026-03-07T00:00:00-05:00", "2026-10-31T00:00:00-04:00", "2026-11-01T01:10:00-05:00",
            "2026-10-03T12:00:00+10:30", "2026-11-29T12:00:00Z", "9999-12-31T23:30:00Z", "0"]
misfires = ["skip", "once", "all", "all:1000", "all:0", "ALL:5"]
write("schedule_cron", [f"{c}\n{zones[i % len(zones)]}\n{instants[i % len(instants)]}\n{misfires[i % len(misfires)]}"
                        for i, c in enumerate(crons)])

units = ["occurrence", "minute", "hour", "day", "week", "iso_week", "month", "year", "Week", "fortnight"]
pk_instants = ["2026-11-29T07:05:09Z", "2026-11-29T21:30:00Z", "2021-01-03T12:00:00Z",
               "2026-11-01T05:30:00Z", "2026-11-01T06:30:00Z", "9999-12-31T23:30:00Z", "1798761600"]
write("period_key", [f"{u}\n{zones[i % len(zones)]}\n{pk_instants[i % len(pk_instants)]}" for i, u in enumerate(units)])

# crates/core/src/retry.rs, crates/engine/tests/retries.rs
write("retry_policy", [
    '{"delays": ["1s", "2s"], "max_attempts": 3}',
    '{"transient": {"delays": ["1m", "5m", "30m"], "max_attempts": 3}, "permanent": {"delays": [], "max_attempts": 1}, "retry_after_cap": "1h"}',
    '{"max_attempts": 5}',
    '{"delays": ["250ms", "1h 30m"]}',
    '{"retry_after_cap": "30days"}',
    '{"delays": ["31days"]}',
    '{"transient": {"delays": ["1s"]}}',
    '{}', '1h 30m', '250ms', '2days 3h', '5m',
])

# The Standard Webhooks specification's vector (crates/channels/src/signing.rs).
spec = ("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_p5jXN8AQM9LWM0D4loKWxJek", "1614265330",
        "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=", '{"test": 2432232314}')
write("webhook_standard", ["\n".join(spec),
                           "\n".join([spec[0], spec[1], spec[2], "v2,abc v1,notbase64!! " + spec[3], spec[4]]),
                           "\n".join(["whsec_c2hvcnQ=", "id", "-9223372036854775808", "", ""]),
                           "\n".join(["whsec_" + "AQ" * 32 + "==", "msg_1", "0", "v1a,abc", "{}"])])
write("webhook_svix", ["\n".join(spec),
                       "\n".join([spec[0] + ", whsec_" + "BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=", spec[1], " 1614265330 ", spec[3] + " v1,AAAA", spec[4]]),
                       "\n".join(["", "msg", "not a number", "v1,", ""])])

# crates/engine/src/inbound.rs tests, crates/server/tests/inbound.rs
events = [
    {"type": "email.bounced", "data": {"email_id": "e1", "to": ["a@x.io"], "bounce": {"type": "Permanent", "subType": "General"}}},
    {"type": "email.bounced", "data": {"to": ["a@x.io"], "bounce": {"type": "Transient"}}},
    {"type": "email.bounced", "data": {"to": ["a@x.io"], "bounce": {"type": "Odd"}}},
    {"type": "email.complained", "created_at": "2026-11-30T03:00:00Z", "data": {"email_id": "re_1", "to": ["Ann <ann@example.com>", "ann@example.com"]}},
    {"type": "email.delivered", "data": {"email_id": "re_9"}},
    {"type": "suppression.added", "data": {"email": "b@x.io", "address": "c@x.io"}},
    {"type": "email.suppressed", "data": {"to": "d@x.io", "message_id": "m1"}},
    {"type": "contact.created", "data": {}},
    {"data": {"to": ["a@x.io"]}},
]
write("inbound_classify", [json.dumps(e) for e in events] + ["not json at all", "[1,2,3]", '"email.bounced"'])

# crates/channels/src/email/unsubscribe.rs tests, crates/engine/tests/email.rs
write("unsubscribe_token", [
    "s3cret\nusr_1\nweekly\nv1.1a2b3c4d.dXNyXzE.d2Vla2x5.AAAA",
    "an unsubscribe secret of 32+ characters!\nrcpt_01JABC\ndaily-news\n",
    "other\nusr_2\nweekly\nnope",
    "  \nx\ny\n",
])

# crates/channels/src/email/template.rs tests, crates/engine/tests/email.rs
write("template_check", [
    "Hi {{ recipient.id }}",
    "{{ recipient.attributes.name }} {{ period.key }}",
    "ok\0<p>{{ recipent.id }}</p>",
    "Digest {{ period.key }}\0<p>{{ artifact.content }}</p>\0{{ artifact.content }}\n{{ unsubscribe_url }}\n",
    "{% for i in range(10000) %}{% for j in range(10000) %}x{% endfor %}{% endfor %}",
    "{{ 'a' * 2000000 }}",
    "{% if payload.x %}{{ payload.x | upper }}{% else %}none{% endif %}",
    "plain subject\0<p>plain & simple</p>\0plain text\n",
    "{% raw %}{{ not a var }}{% endraw %}",
    "{{ recipient.email | urlencode }} {{ topic | title }}",
])
