"""The how-to pages' stories for a pretrained model, run as written on a tiny random ESM-2 made in the test:
an MI head (`docs/how-to/mi-head.md`) and a learned order (`docs/how-to/learned-order.md`), each from the
command line, the sizes cut to a test's. A page that shows a flag or a file the commands no longer take fails."""

from __future__ import annotations

import pytest

from tests.docs_commands import commands, section, shrink
from tests.fixtures.protein_models import HEAVY

pytest.importorskip("transformers")

SMALL = {"--states": "4", "--shard-size": "2", "--rows": "2", "--steps": "3", "--n": "3", "--length": "8:12",
         "--reference": "", "--batch-size": "2", "--samples": "2", "--budget": "3", "--warmup": "1", "--eval-every": "3",
         "--ckpt-every": "3"}


@pytest.mark.parametrize("page, made", [("how-to/mi-head.md", ["runs/mi-head-antiberty/mi_head.json", "antiberty-mi.fasta"]),
                                        ("how-to/learned-order.md", ["runs/order-antiberty/order_policy.json",
                                                                     "antiberty-learned.fasta"])])
def test_the_pretrained_model_story_runs(page, made, esm2_dir, cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    steps = commands(section(page, "Your pretrained model"), {"M": f"hf:{esm2_dir}", "F": str(HEAVY)})
    ran = 0
    for argv in steps:
        if argv[:2] == ["proteins", "import"]:  # the wheel's model: the tiny ESM-2 stands in for it
            continue
        code, _, err = cli(shrink(argv, SMALL))
        assert code == 0, f"{argv}\n{err}"
        ran += 1
    assert ran == (3 if "mi-head" in page else 2)
    assert all((tmp_path / f).is_file() for f in made)
    assert not any(p.name == "mi_head.json" or p.name == "order_policy.json" for p in esm2_dir.iterdir())
