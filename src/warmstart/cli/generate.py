"""`warmstart generate` and `warmstart prompt`: decoding and prompting a generating run.

Flags that set config keys take their help from the config field (generation/decode.py GenerationConfig,
commands/prompt.py PromptConfig)."""

from __future__ import annotations

import sys

from warmstart.cli.common import (
    add_text_options,
    config_flags,
    config_rows,
    data_flag,
    data_options,
    flag_keys,
    flags,
    open_input,
    raw_epilog,
)

GENERATE_FLAGS = [  # (flag, config key, add_argument keywords)
    ("--max-new-tokens", "max_new_tokens", {}),
    ("--max-length", "max_length", {}),
    ("--strategy", "strategy", {}),
    ("--temperature", "temperature", {}),
    ("--top-k", "top_k", {}),
    ("--top-p", "top_p", {}),
    ("--num-beams", "num_beams", {}),
    ("--length-penalty", "length_penalty", {}),
    ("--seed", "seed", {}),
]

PROMPT_FLAGS = [
    ("--shots", "shots", {}),  # "0,1,4": read as a list by the config
    ("--seeds", "seeds", {}),
    ("--max-examples", "max_examples", {}),
    ("--template", "template", {}),  # typed on one line: a literal \n is a newline
]


def _resolve(cls, a, table, extra: dict | None = None):
    """--config file < flags < KEY=VALUE overrides, as one config of ``cls``."""
    from warmstart import config as C

    given = {**flags(a, flag_keys(table)), **(extra or {})}
    return C.from_dict(cls, C.layered(config_file=a.config, flags=given, overrides=a.overrides))


def _generate(a):
    from warmstart.generation.decode import GenerationConfig
    from warmstart.inference.generate import run_generate

    cfg = _resolve(GenerationConfig, a, GENERATE_FLAGS, {"use_cache": False} if a.no_cache else None)
    prompts = list(a.prompt or [])
    if a.file:
        with sys.stdin if a.file == "-" else open_input(a.file) as fh:
            prompts += [line.rstrip("\r\n") for line in fh if line.strip()]
    run_generate(
        a.run, prompts, cfg, show_special=a.show_special, mlm_sampling=a.mlm_sampling, mlm_sweeps=a.mlm_sweeps
    )


def _prompt(a):
    from warmstart.commands.prompt import PromptConfig, evaluate_prompting, format_table

    if a.template:  # typed on one line: a literal \n is a newline
        a.template = a.template.replace("\\n", "\n")
    cfg = _resolve(PromptConfig, a, PROMPT_FLAGS)
    result = evaluate_prompting(a.run, a.dataset, cfg, a.split, out=a.out, options=data_options(a))
    print(f"{a.dataset} ({a.split}, {result['examples']:,} examples), label words {result['label_words']}")
    print(format_table(result))
    print(f"results: {result['out']}/prompting.json, plot: {result['plot']}")


def add_generate(sub) -> None:
    from warmstart.config import help_text
    from warmstart.generation.decode import GenerationConfig

    gn = sub.add_parser(
        "generate", help="continue text with a gpt2 or masked-LM run, or transform it with a t5/bart run"
    )
    raw_epilog(gn, help_text(GenerationConfig))
    gn.add_argument(
        "run",
        help="gpt2, t5, bart or masked-LM (bert family) run directory (its final model) or model directory",
    )
    gn.add_argument("--prompt", action="append", metavar="TEXT", help="a prompt (repeat for several)")
    gn.add_argument("--file", metavar="PROMPTS.txt", help="a text file with one prompt per line")
    config_flags(gn, config_rows(GenerationConfig), GENERATE_FLAGS)
    gn.add_argument("--no-cache", action="store_true", help="recompute every step (use_cache=false)")
    gn.add_argument(
        "--mlm-sampling",
        default=None,
        metavar="{left-to-right,gibbs}",  # checked by inference/mlm_generate.py (keeps the parser light)
        help="masked-LM runs: append [MASK] and fill it, token by token (left-to-right, the default), or "
        "fill a fixed number of masks and resample them (gibbs, Wang & Cho 2019)",
    )
    gn.add_argument(
        "--mlm-sweeps", type=int, default=None, help="gibbs: passes that resample every new position (3)"
    )
    gn.add_argument("--show-special", action="store_true", help="keep special tokens (e.g. T5 sentinels)")
    gn.add_argument("--config", help="YAML file of generation keys")
    gn.add_argument("overrides", nargs="*", metavar="KEY=VALUE", help="generation options, e.g. top_p=0.9")
    gn.set_defaults(func=_generate)


def add_prompt(sub) -> None:
    from warmstart.commands.prompt import PromptConfig
    from warmstart.config import help_text

    said = "zero- and few-shot classification by prompting a gpt2, t5 or bart run"
    pm = sub.add_parser("prompt", help=said)
    raw_epilog(pm, help_text(PromptConfig))
    pm.add_argument("run", help="gpt2, t5 or bart run directory (its final model) or model directory")
    data_flag(pm, "labeled dataset name or file", dest="dataset")
    pm.add_argument("--split", default="test", choices=["validation", "test"], help="split scored")
    config_flags(pm, config_rows(PromptConfig), PROMPT_FLAGS)
    pm.add_argument("--out", help="output directory (default RUN/prompting-DATASET)")
    pm.add_argument("--config", help="YAML file of prompt keys")
    pm.add_argument("--label-column", default="label", help="column with the label")
    add_text_options(pm)
    pm.add_argument("overrides", nargs="*", metavar="KEY=VALUE", help="prompt options, e.g. calibrate=true")
    pm.set_defaults(func=_prompt)
