from tests.campaigns.exports.test_exports import linked
from tests.frontend.conftest import alice_client, bob_client

__all__ = ["alice_client", "bob_client", "linked"]
