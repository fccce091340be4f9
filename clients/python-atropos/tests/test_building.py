import os
from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from clotho_atropos import BuildError, build_env, load_env_class
from conftest import ENVS


@pytest.fixture
def arithmetic():
    return load_env_class(str(ENVS / "arithmetic_env.py"))


def test_defaults_flags_and_yaml_in_atropos_precedence(arithmetic, flags, tmp_path: Path, openai_server) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("env:\n  group_size: 6\n  dataset_size: 7\n  steps_per_eval: 9\n")
    built = build_env(arithmetic, flags("serve", "--config", str(config), "--env.group_size", "3"))
    assert built is not None and built.mode == "serve"
    env = built.env
    assert type(env).__name__ == "ArithmeticEnv"
    assert env.config.group_size == 3  # the flag beats the YAML
    assert env.config.dataset_size == 7 and env.config.steps_per_eval == 9  # the YAML beats config_init
    assert env.config.max_token_length == 256 and env.config.wandb_name == "arithmetic"  # config_init's
    assert [s.config.base_url for s in env.server.servers] == [openai_server.url]
    assert env.server.servers[0].config.num_requests_for_eval == 4  # config_init's server config, merged


def test_process_mode_settings_as_atropos_makes_them(arithmetic, flags, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    built = build_env(arithmetic, flags("process", "--env.total_steps", "3"))
    env = built.env
    assert env.config.ensure_scores_are_not_same is False and env.config.include_messages is True
    assert env.config.use_wandb is True  # process forces it on
    assert env.process_mode and env.n_groups_to_process == 3 and env.group_size_to_process == 4
    # Atropos opened data/arithmetic.jsonl; Clotho writes the JSONL itself, so the empty file is gone.
    assert env.config.data_path_to_save_groups == "data/arithmetic.jsonl"
    assert env.jsonl_writer is None and not os.path.exists("data/arithmetic.jsonl")


def test_evaluate_mode_as_atropos_makes_it(arithmetic, flags, tmp_path: Path, openai_server) -> None:
    evals = tmp_path / "evals"
    before = openai_server.generations
    built = build_env(arithmetic, flags("evaluate", "--env.data_dir_to_save_evals", str(evals), "--env.group_size", "2"))
    assert built is not None and built.mode == "evaluate"
    env = built.env
    assert env.config.use_wandb is True  # evaluate forces it on, as process does
    assert env.config.group_size == 2 and env.config.data_dir_to_save_evals == str(evals)
    assert getattr(env, "jsonl_writer", None) is None  # only process opens a JSONL
    # The CLI writes the merged config before it would evaluate; the evaluation itself is left to the caller.
    written = yaml.safe_load((evals / "evaluate_config.yaml").read_text())
    assert written["env"]["group_size"] == 2 and written["env"]["use_wandb"] is True
    assert written["openai"][0]["base_url"] == openai_server.url and written["slurm"] is False
    assert openai_server.generations == before and sorted(p.name for p in evals.iterdir()) == ["evaluate_config.yaml"]


def test_evaluate_help_is_atropos_evaluate_help(arithmetic, capsys) -> None:
    assert build_env(arithmetic, ["evaluate", "--help"]) is None
    out = capsys.readouterr().out
    assert "evaluate" in out and "--env.data_dir_to_save_evals" in out and "--openai.base_url" in out


def test_bad_flags_fail_as_under_atropos(arithmetic, flags, capsys) -> None:
    # A value of the wrong type: Atropos's CLI raises pydantic's error (a traceback under `python env.py`).
    with pytest.raises(ValidationError, match="env.group_size"):
        build_env(arithmetic, flags("serve", "--env.group_size", "many"))
    # A flag the class does not have: argparse's usage error, exit code 2.
    with pytest.raises(BuildError) as error:
        build_env(arithmetic, flags("serve", "--env.no_such_field", "1"))
    assert error.value.exit_code == 2
    assert "unrecognized arguments: --env.no_such_field" in error.value.output
    # Shown as Atropos shows it (its logger, unconfigured, prints to stderr), not only kept.
    assert "unrecognized arguments: --env.no_such_field" in capsys.readouterr().err


def test_help_is_atropos_help(arithmetic, capsys) -> None:
    assert build_env(arithmetic, ["process", "--help"]) is None
    out = capsys.readouterr().out
    assert "--env.dataset_size" in out and "--openai.base_url" in out and "--slurm" in out


def test_a_single_server_config_keeps_its_flags_unlike_atropos(tmp_path: Path, tokenizer_dir: str) -> None:
    path = tmp_path / "single_server_env.py"
    path.write_text(
        "from atroposlib.envs.base import APIServerConfig, BaseEnv, BaseEnvConfig\n"
        "class SingleServerEnv(BaseEnv):\n"
        "    @classmethod\n"
        "    def config_init(cls):\n"
        f"        return BaseEnvConfig(tokenizer_name={tokenizer_dir!r}), APIServerConfig(model_name='m', base_url='http://localhost:9001/v1')\n"
        "    async def get_next_item(self): return 1\n"
        "    async def evaluate(self, *a, **k): pass\n"
    )
    cls = load_env_class(str(path))
    argv = ["serve", "--openai.base_url", "http://10.1.2.3:8000/v1"]
    as_atropos = build_env(cls, argv, honour_openai_flags=False).env
    assert [s.config.base_url for s in as_atropos.server.servers] == [f"http://localhost:{p}/v1" for p in range(9004, 9008)]
    honoured = build_env(cls, argv).env
    assert [s.config.base_url for s in honoured.server.servers] == ["http://10.1.2.3:8000/v1"]
    assert honoured.server.servers[0].config.api_key == "x"
