"""`warmstart diff RUN_A RUN_B`: where the weights of one run moved from those of another, layer by layer."""

from __future__ import annotations


def _diff(a):
    import json

    from warmstart.commands.diff import diff

    result = diff(a.run_a, a.run_b, plot=a.plot)
    if a.json:
        print(json.dumps({k: v for k, v in result.items() if k != "table"}, indent=2))
        return
    print(result["table"])
    if result.get("plot"):
        print(f"plot: {result['plot']}")


def add_diff(sub) -> None:
    df = sub.add_parser(
        "diff",
        help="the relative weight change ||W_B - W_A|| / ||W_A|| per layer between two runs",
        description="Compares two checkpoints of one architecture (e.g. a pretrained model and a model "
        "finetuned from it): for the embeddings, each layer (and its attention, feed-forward and norms) and "
        "the other modules, the Frobenius norm of the difference over that of RUN_A's weights. Tensors only "
        "one of them has (a task head) are listed, not compared.",
    )
    df.add_argument(
        "run_a",
        metavar="RUN_A",
        help="run, checkpoint or transformers directory: the reference (a finetuned run: its best/, "
        "else final/)",
    )
    df.add_argument("run_b", metavar="RUN_B", help="run, checkpoint or transformers directory to compare")
    df.add_argument("--json", action="store_true", help="print the groups and their changes as JSON")
    df.add_argument("--plot", metavar="FILE.png", help="also draw a bar chart of the change per layer")
    df.set_defaults(func=_diff)
