"""Read back an offline W&B run: the records of its ``run-ID.wandb`` file (RUN/wandb/offline-run-*/), as
``wandb sync`` would upload them.

The file is a LevelDB-style log: a 7-byte header (":W&B", magic, version), then 32 KiB blocks of chunks,
each with a 7-byte header (CRC-32, length, type: 1 full, 2 first, 3 middle, 4 last) holding a serialized
``wandb_internal_pb2.Record``. wandb 0.31 no longer ships its Python reader, so it is read here."""

import json
import struct
from pathlib import Path

BLOCK = 32 * 1024


def records(path: Path) -> list:
    """Every record of the ``.wandb`` file, in order (``wandb.proto.wandb_internal_pb2.Record``)."""
    from wandb.proto import wandb_internal_pb2 as pb

    data, pos, chunks, out = Path(path).read_bytes(), 7, b"", []
    assert data[:4] == b":W&B", f"{path} is not a W&B transaction log"
    while pos + 7 <= len(data):
        left = BLOCK - pos % BLOCK
        if left < 7:  # a block's tail too short for a header is padding
            pos += left
            continue
        _, length, kind = struct.unpack("<IHB", data[pos : pos + 7])
        if kind == 0 and length == 0:
            pos += left
            continue
        chunks += data[pos + 7 : pos + 7 + length]
        pos += 7 + length
        if kind in (1, 4):
            record = pb.Record()
            record.ParseFromString(chunks)
            out.append(record)
            chunks = b""
    return out


def offline_run(run_dir: Path) -> dict:
    """The offline run under ``run_dir``: its id, config, summary, history rows and logged artifacts."""
    (path,) = Path(run_dir).glob("wandb/offline-run-*/run-*.wandb")
    run = {"config": {}, "summary": {}, "history": [], "artifacts": []}
    for r in records(path):
        kind = r.WhichOneof("record_type")
        if kind == "run":
            run["id"] = r.run.run_id
            run["name"] = r.run.display_name
            run["config"].update({i.key: json.loads(i.value_json) for i in r.run.config.update})
        elif kind == "config":
            run["config"].update({i.key: json.loads(i.value_json) for i in r.config.update})
        elif kind == "summary":
            for i in r.summary.update:
                run["summary"]["/".join(i.nested_key) or i.key] = json.loads(i.value_json)
        elif kind == "history":
            run["history"].append(
                {"/".join(i.nested_key) or i.key: json.loads(i.value_json) for i in r.history.item}
            )
        elif kind == "artifact":
            run["artifacts"].append(
                {"name": r.artifact.name, "files": sorted(e.path for e in r.artifact.manifest.contents)}
            )
    return run
