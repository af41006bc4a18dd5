"""When a search may stop a trial (issue 42): only once the trial's warmup is over and it has seen its data
once. At the first evaluation a 3-epoch run is still warming up while a 1-epoch run trains at its full
rate; judged there, the median pruner stopped the longer runs of a Brown POS search."""

from __future__ import annotations

from warmstart.commands.search import Pruning


class Trial:
    """Optuna's trial as the callback uses it: reports kept, every consultation of the pruner noted."""

    def __init__(self):
        self.reports, self.asked = {}, []

    def report(self, value: float, step: int) -> None:
        self.reports[step] = value

    def should_prune(self) -> bool:
        self.asked.append(max(self.reports))
        return False


def _asked_at(epochs, steps: int, warmup: int, every: int) -> tuple[list[int], list[int]]:
    trial = Trial()
    hook = Pruning(trial, epochs)
    hook.on_train_begin({"metric": "accuracy", "steps": steps, "warmup_steps": warmup})
    judged = []
    for step in range(0, steps + 1, every):
        before = len(trial.asked)
        hook.on_evaluate(step, {"accuracy": 0.5})
        if len(trial.asked) > before:
            judged.append(step)
    return sorted(trial.reports), judged


def test_a_three_epoch_trial_is_judged_from_the_end_of_its_first_epoch():
    reported, judged = _asked_at(3, steps=300, warmup=30, every=25)
    assert reported == list(range(1, 13))  # every evaluation reported, by its number (step 0 is untrained)
    assert judged == list(range(100, 300, 25))  # the last evaluation judges nothing: the trial completes


def test_a_long_warmup_holds_judgement_past_the_first_epoch():
    assert _asked_at(2, steps=200, warmup=150, every=25)[1] == [175]


def test_a_trial_of_set_steps_is_judged_once_its_warmup_is_over():
    assert _asked_at(None, steps=200, warmup=20, every=25)[1] == list(range(25, 200, 25))


def test_a_trial_of_one_epoch_or_less_is_never_stopped():
    assert _asked_at(1, steps=100, warmup=10, every=25)[1] == []
    assert _asked_at(0.5, steps=50, warmup=5, every=10)[1] == []


def test_with_repeats_the_trial_is_judged_on_its_first_seed_only():
    """--repeats 2: the seeds run one after another through the same callback; the second seed's
    evaluations are neither reported (they were numbered after the first seed's) nor judged."""
    trial = Trial()
    hook = Pruning(trial, 2)
    for _seed in (1, 2):
        hook.on_train_begin({"metric": "accuracy", "steps": 100, "warmup_steps": 10})
        for step in range(25, 101, 25):
            hook.on_evaluate(step, {"accuracy": 0.5 + step / 1000})
    assert trial.reports == {1: 0.525, 2: 0.55, 3: 0.575, 4: 0.6} and trial.asked == [2, 3]
