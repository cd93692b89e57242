"""Requester pages, one module per idea.

- ``campaigns``: the campaign list, creation, detail, transitions, stages and item uploads;
- ``workforce``: the local workforce of a campaign (invite links, grants);
- ``review``: the review queue and the requester's approve/reject decisions;
- ``common``: the lookups and helpers they share.

Views are thin: reads go through the rooms' selectors, writes through their services
(``campaigns.design``, ``campaigns.work``, …). A campaign the user may not see is a
404, never a 403, so that the slugs of other requesters' campaigns do not leak.
"""
