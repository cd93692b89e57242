"""Model in the loop (issue 38): a requester's model endpoints and the calls made to them.

``endpoints``  the registry: OpenAI-compatible chat-completions endpoints and the built-in
               baseline, their keys encrypted as platform credentials are
``baseline``   passage QA by BM25 sentence retrieval: pure, no network
``client``     the chat-completions wire format over ``requests``, bounded by a deadline
``calls``      ``model_call_request`` (row + outbox in the caller's transaction) and
               ``model_call_run`` (the Celery task's body: concurrency, retries, cost once)
``selectors``  what a page polls (``model_call_state``) and the endpoints a requester has

It calls an external service, as platforms do, and sits on their line of the layers.
"""
