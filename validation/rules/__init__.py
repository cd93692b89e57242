"""Review rules: per-stage, composable, each deciding approve / reject / hold with the
numbers that made it. Pure functions over plain data; ``validation.services`` loads
the data and applies the decisions. Three modules:

- ``settings`` — what a stage's rule settings may say, checked when it is saved
  (``review_rules_validate``, ``bonus_rules_validate``, ``escalation_rule_validate``);
- ``facts`` — what the rules read (``Submission``, ``StageFacts``, ``facts_build``)
  and what a rule says (``Verdict``);
- ``verdicts`` — one function per deciding rule (``RULE_FUNCTIONS``), their
  combination (``combine``, ``review``) and the rules a stored submission is reviewed
  for (``REVIEWING_RULES``, from ``RULE_FUNCTIONS``).

A stage's ``review_rules`` is a list of ``{"rule": name, ...params}``; check it with
``review_rules_validate`` when the stage is saved. Rules and their params
(defaults in ``RULES``; every deciding rule takes ``action`` — what a failed
check does, "reject" or "hold" — and ``on_missing`` — what it says when it has no
data yet: "approve", "hold" or "skip"):

- ``auto_approve`` — approve (also applied at submit by ``assignment_submit``).
- ``gold_accuracy`` {min, min_gold} — the worker's accuracy on gold items in the
  stage is ≥ ``min`` once they answered ``min_gold`` gold items.
- ``consensus`` {min, min_answers} — share of the assignment's items whose label
  equals the item's majority label (over the HIT's stored, not rejected
  answers; ties have no majority), among items with ≥ ``min_answers`` answers.
- ``peer_overlap`` {metric, min, fields} — mean over items of the best match
  with a peer's answer on the same item: ``metric`` "sentences" (sentence-id
  overlap, WhyQA) or a ROUGE F ("rouge1", "rouge2", "rougeL", "rougeSU4") of the
  entry's texts.
- ``work_time`` {min_seconds, per_item} — work time (accept to submit) ≥ the floor.
- ``llm_flag`` {action, on_missing} — holds an answer whose LLM flag
  (``Assignment.llm_flag``, campaigns.assist.flags) is raised, for a person: its only
  action is hold, so a flag alone never rejects; no flag yet: ``on_missing`` (hold,
  or skip). Needs the stage setting ``llm_flag``.
- ``paste_share`` {max, min_chars, fields} — pasted characters (page telemetry)
  / characters of the answer's texts ≤ ``max``.
- ``duplicates`` {threshold, max_share, fields} — share of the assignment's
  texts that duplicate (equal after normalising, or token Jaccard ≥
  ``threshold``) a text submitted earlier in the stage (or earlier in the same
  answer) ≤ ``max_share``. The earliest text of a group is the original.
- ``no_answer_rate`` {max, min_answers} — the worker's share of "no answer"
  over the stage ≤ ``max`` once they gave ``min_answers`` answers.

Worker-level entries, which decide no assignment (their verdict is "skip"):

- ``gold_disqualify`` {min, min_gold, qualification, block} — revoke
  qualification type ``qualification`` (id) and/or block the worker from the
  requester's work when their gold accuracy is < ``min`` after ``min_gold``.
- ``final_labels`` {count_writer, discard_labels, require, ties} — how the
  dashboard's final labels are voted (``validation.selectors.stage_final_labels``).

Who may approve: only a rule that decides to approve — agreement with gold
(``gold_accuracy``), with the majority (``consensus``), with peers (``peer_overlap``)
or an explicit ``auto_approve`` (``APPROVING``). The others only look for problems
(``work_time``, ``paste_share``, ``duplicates``, ``no_answer_rate``): when they find
none their verdict is "pass", which does not vote, so an assignment no approving rule
vouches for stays submitted and reaches a person in the review queue.

Combination (``combine``): any reject → reject; else any hold → hold; else any
approve → approve; rules that skip or pass do not vote, and when none votes there is
no decision (the assignment stays submitted).
"""
