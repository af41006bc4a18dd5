"""The finetuned arms of a study: what each cell's model is and how it is finetuned.

A plain study compares the pretrained model with its scratch twin. A stability study (``--stability``)
finetunes the pretrained model in the 2 x 2 x 2 arms of Mosbach et al. 2021 and Zhang et al. 2021
("Revisiting Few-sample BERT Fine-tuning"): Adam with or without bias correction (BERTAdam), the study's
epochs or more, and no re-initialisation or the top layers re-initialised; the seeds show each arm's spread.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Arm:
    name: str  # the cells' folder name and the model name in study.json
    label: str  # as reports show it
    from_scratch: bool = False
    epochs: float | None = None  # None: the study's --epochs
    overrides: tuple[str, ...] = ()


PRETRAINED = Arm("pretrained", "pretrained")
SCRATCH = Arm("scratch", "scratch twin", from_scratch=True)
# the finetune keys a stability study sets in its arms (refused as overrides there)
STABILITY_KEYS = ("train.adam_bias_correction", "strategy.reinit_top_k")


def stability_arms(epochs: float, long_epochs: float, reinit: int) -> list[Arm]:
    arms = []
    for correction in (True, False):
        for e in (epochs, long_epochs):
            for k in (0, reinit):
                optimizer = "adamw" if correction else "bertadam"
                arms.append(
                    Arm(
                        f"{optimizer}-{e:g}ep-reinit{k}",
                        f"{'AdamW' if correction else 'BERTAdam'}, {e:g} epoch{'' if e == 1 else 's'}, "
                        f"re-init top {k}",
                        epochs=e,
                        overrides=(
                            f"train.adam_bias_correction={str(correction).lower()}",
                            f"strategy.reinit_top_k={k}",
                        ),
                    )
                )
    return arms


def study_arms(spec) -> list[Arm]:
    """The arms of a StudySpec, in the order cells run and reports list them."""
    if getattr(spec, "stability", False):
        return stability_arms(spec.epochs, spec.long_epochs, spec.reinit)
    return [PRETRAINED, SCRATCH]
