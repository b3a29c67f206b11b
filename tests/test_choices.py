"""The run path's sets of words act as the enums they replaced where swarmdeck uses them."""

import copy
import pickle

from swarmdeck.actions.booking import Decision, Via
from swarmdeck.actions.oom import OomVerdict


def test_members_are_instances_with_their_name_and_value_and_survive_copies() -> None:
    assert isinstance(Via.CAP, Via) and (Via.CAP.name, Via.CAP.value) == ("CAP", "cap")
    assert Via.CAP is not Via.DEFAULT and Via.CAP != Via.DEFAULT
    for member in (Via.HISTORY, Decision.WAIT, OomVerdict.SLICE_FULL):
        assert copy.deepcopy(member) is member
        assert pickle.loads(pickle.dumps(member)) is member
    assert repr(Decision.ADMIT) == "<Decision.ADMIT: 'admit'>"
    assert OomVerdict.OWN_CAP.exit_code == 250 and OomVerdict.NONE.exit_code is None
