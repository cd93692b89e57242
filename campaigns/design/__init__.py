"""Campaigns, stages and items: what a requester designs."""
