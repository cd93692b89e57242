"""Entity-linking benchmarks: span proposal throughput, cached suggestion latency,
the as-you-type endpoint (/work/suggest/) from cache, and suggestions under
Wikidata throttling (20 % 429/maxlag answers).

    .venv/bin/python bench/linking_bench.py [--questions 20000] [--processes 1 2]
        [--batch-size 256] [--lookups 5000] [--suggestions 400] [--threads 8]
        [--endpoint-requests 3000] [--skip-spans | --spans-only]

Needs PostgreSQL (``DATABASE_URL``, default
postgres://postgres@127.0.0.1:5432/qaportal_linkbench; a ``test_`` database is
created and dropped) and the Mintaka sample at ../shared/data/mintaka/. Wikidata
is the local fake of tests/linking/fake_wikidata.py loaded with the bundled
offline index's items; nothing goes to the internet.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/qaportal_linkbench")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")

import django  # noqa: E402

django.setup()

from django.db import connection, connections  # noqa: E402
from django.test.utils import setup_test_environment  # noqa: E402

from linking.client import offline_index  # noqa: E402
from linking.evaluation import load_mintaka, span_coverage  # noqa: E402
from linking.span_pipeline import get_nlp, spacy_model_name  # noqa: E402
from linking.spans import propose_spans_batch  # noqa: E402
from linking.wikidata import WikidataClient, reset_host_gates  # noqa: E402
from tests.linking.fake_wikidata import FakeWikidata  # noqa: E402

# MINTAKA_SAMPLE overrides it (a worktree's parent may not hold shared/).
MINTAKA = Path(
    os.environ.get("MINTAKA_SAMPLE")
    or ROOT.parent / "shared" / "data" / "mintaka" / "mintaka_dev_sample.json"
)
AGENT = "qaportal-bench/1.0 (https://example.org/qaportal; bench@example.org)"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def bench_spans(args: argparse.Namespace) -> None:
    questions = load_mintaka(MINTAKA)
    t0 = time.perf_counter()
    get_nlp()
    print(f"spaCy model {spacy_model_name()} loaded in {time.perf_counter() - t0:.2f} s")
    proposals = list(propose_spans_batch([q["question"] for q in questions]))
    cov = span_coverage(questions, proposals)
    digest = hashlib.sha256(
        json.dumps([[(s.start, s.end, s.kind) for s in spans] for spans in proposals]).encode()
    ).hexdigest()[:16]
    print(f"proposals' fingerprint (offsets and kinds, Mintaka sample): {digest}")
    print(
        f"Mintaka sample coverage ({cov.gold} gold 'entity' spans, {cov.questions} questions): "
        f"exact {cov.exact_rate:.1%}, gold inside a proposal {cov.inside_rate:.1%}, "
        f"{cov.proposals_per_question:.2f} proposals per question"
    )
    for kind in ("ordinal", "date", "cardinal"):
        c = span_coverage(questions, proposals, entity_types=[kind])
        print(
            f"  {kind:8s} ({c.gold:3d} gold): exact {c.exact_rate:.1%}, inside {c.inside_rate:.1%}"
        )
    texts = [q["question"] for q in questions]
    texts = (texts * (args.questions // len(texts) + 1))[: args.questions]
    for n_process in args.processes:
        t0, cpu0 = time.perf_counter(), time.process_time()
        count = sum(
            len(s)
            for s in propose_spans_batch(texts, batch_size=args.batch_size, n_process=n_process)
        )
        elapsed, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        # With n_process > 1 the children's CPU is not in this process's.
        print(
            f"span proposal, {len(texts)} questions, batch_size={args.batch_size}, "
            f"n_process={n_process}: {elapsed:.1f} s wall, {cpu:.1f} s CPU of this process "
            f"({len(texts) / elapsed:.0f} q/s, {count} spans), load average "
            f"{os.getloadavg()[0]:.1f}  target (issue 24) <= 20 s on one process"
        )


def bench_cached_lookup(fake: FakeWikidata, args: argparse.Namespace) -> None:
    client = WikidataClient(api_url=fake.url, user_agent=AGENT)
    index = offline_index()
    labels = [h["label"] for h in index.search("a", limit=50).hits]
    words = sorted({item.split()[0] for item in labels})[:20] + labels[:30]
    for word in words:
        client.search(word)
    ids = [h["id"] for h in index.search("the", limit=50).hits]
    client.get_entities(ids)
    before = len(fake.requests)
    timings: list[float] = []
    for n in range(args.lookups):
        t0 = time.perf_counter()
        if n % 2:
            client.search(words[n % len(words)])
        else:
            client.get_entities([ids[n % len(ids)]])
        timings.append((time.perf_counter() - t0) * 1000)
    assert len(fake.requests) == before, "a cached lookup went to Wikidata"
    print(
        f"cached suggestion lookup ({args.lookups}, search and get_entities, PostgreSQL cache): "
        f"p50 {statistics.median(timings):.2f} ms, p99 {percentile(timings, 0.99):.2f} ms, "
        f"max {max(timings):.2f} ms  target p99 < 5 ms"
    )


def bench_suggest_endpoint(args: argparse.Namespace) -> None:
    """``GET /work/suggest/`` by a worker holding a linking assignment, every query
    already cached (as after ``linking.prefetch_stage``): the whole Django request
    (session, ownership query, rate counter, cached list), timed in-process."""
    import json as json_module
    from datetime import timedelta

    from django.conf import settings
    from django.core.cache import cache
    from django.test import Client
    from django.urls import reverse

    from campaigns.design.items import items_upload
    from campaigns.design.services import campaign_create, stage_add
    from campaigns.models import Assignment
    from campaigns.platforms.publishing import campaign_start
    from campaigns.work.invites import invite_create, invite_token
    from linking.selectors import suggestions_search
    from tests.factories import UserFactory

    settings.LINKING_SUGGEST_RATE_PER_MINUTE = 10**9
    owner = UserFactory.create(username="bench-suggest")
    campaign = campaign_create(owner=owner, name="Suggest bench", slug="suggest-bench")
    stage = stage_add(campaign=campaign, name="Link", task_type="answer_entity_linking")
    items_upload(
        stage=stage,
        content=json_module.dumps({"external_id": "a", "question": "Q?", "answer": "X"}).encode(),
        filename="items.jsonl",
    )
    campaign_start(campaign=campaign, to_state="live")
    client = Client()
    link = invite_create(campaign=campaign, created_by=owner, expires_in=timedelta(days=1))
    client.post(reverse("worker:invite", kwargs={"token": invite_token(invite=link)}))
    client.post(reverse("worker:accept", kwargs={"stage_id": stage.pk}))
    assignment = Assignment.objects.get(hit__stage=stage)
    index = offline_index()
    queries = sorted(
        {h["label"] for w in ("the", "a", "s") for h in index.search(w, limit=50).hits}
    )
    for query in queries:
        suggestions_search(query=query)
    timings: list[float] = []
    for n in range(args.endpoint_requests + 200):
        t0 = time.perf_counter()
        response = client.get(
            "/work/suggest/", {"a": str(assignment.pk), "q": queries[n % len(queries)]}
        )
        elapsed = (time.perf_counter() - t0) * 1000
        assert response.status_code == 200, response.content
        if n >= 200:  # warm-up: connections, template-free code paths, caches
            timings.append(elapsed)
    cache.clear()
    print(
        f"suggestion endpoint from cache ({args.endpoint_requests} GET /work/suggest/, "
        f"Django test client in-process: session, ownership, rate counter, Redis list): "
        f"p50 {statistics.median(timings):.2f} ms, p99 {percentile(timings, 0.99):.2f} ms, "
        f"max {max(timings):.2f} ms  target p99 < 5 ms"
    )


def bench_throttled(args: argparse.Namespace) -> None:
    index = offline_index()
    items = {}
    for qid, entity in index.get_entities(list(index._items)).items():
        if entity is not None:
            items[qid] = {"label": entity["label"], "aliases": entity["aliases"]}
    questions = load_mintaka(MINTAKA)
    spans = sorted(
        {
            e["mention"]
            for q in questions
            for e in q["questionEntity"]
            if e["entityType"] == "entity"
        }
    )[: args.suggestions]
    with FakeWikidata(
        items=items, latency=0.002, failure_rate=0.2, failure_kinds=("429", "maxlag"),
        retry_after=0, seed=1,
    ) as fake:  # fmt: skip
        client = WikidataClient(
            api_url=fake.url, user_agent=AGENT, background=True, backoff_base=0.05,
            backoff_max=1.0, max_retries=8,
        )  # fmt: skip
        results: dict[str, int] = {}
        errors: list[str] = []
        lock = threading.Lock()
        queue = list(spans)

        def worker() -> None:
            try:
                while True:
                    with lock:
                        if not queue:
                            return
                        text = queue.pop()
                    try:
                        hits = client.search(text).hits
                    except Exception as exc:
                        with lock:
                            errors.append(f"{text}: {exc}")
                        continue
                    with lock:
                        results[text] = len(hits)
            finally:
                connections.close_all()

        t0 = time.perf_counter()
        threads = [threading.Thread(target=worker) for _ in range(args.threads)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.perf_counter() - t0
        failures = [c.failure for c in fake.requests if c.failure]
        print(
            f"throttled fake (20 % 429/maxlag, Retry-After 0, backoff 0.05 s doubling, "
            f"{args.threads} threads): {len(results)}/{len(spans)} suggestions arrived, "
            f"{len(errors)} errors, {len(fake.requests)} requests ({failures.count('429')} "
            f"answered 429, {failures.count('maxlag')} maxlag; "
            f"{len(fake.requests) / max(1, len(spans)):.2f} requests per suggestion), "
            f"max concurrent requests per host {fake.max_in_flight} (server side), "
            f"{client.gate.max_in_flight} (client side), {elapsed:.1f} s"
        )
        for error in errors[:5]:
            print("  error:", error)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=20_000)
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--lookups", type=int, default=5000)
    parser.add_argument("--suggestions", type=int, default=400)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--endpoint-requests", type=int, default=3000)
    parser.add_argument("--skip-spans", action="store_true")
    parser.add_argument("--spans-only", action="store_true", help="no database, no Wikidata")
    args = parser.parse_args()
    if not args.skip_spans:
        bench_spans(args)
    if args.spans_only:
        return 0
    setup_test_environment()
    old_name = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        reset_host_gates()
        with FakeWikidata() as fake:
            bench_cached_lookup(fake, args)
        bench_suggest_endpoint(args)
        bench_throttled(args)
    finally:
        connections.close_all()
        connection.creation.destroy_test_db(old_name, verbosity=0)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
