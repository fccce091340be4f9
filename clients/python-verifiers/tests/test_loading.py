"""``<env>`` as an id, a project folder, a package or a module; verifiers' own parser and messages for its flags."""

import os

import pytest

from clotho_verifiers.loading import ConfigRefused, EnvSpec, load, resolve_spec


def test_an_id_is_given_to_verifiers_as_it_is():
    assert resolve_spec("primeintellect/gsm8k@0.1.2") == EnvSpec("primeintellect/gsm8k@0.1.2")


def test_a_module_a_package_and_a_project_folder_resolve_to_an_importable_id(envs, tmp_path):
    assert resolve_spec(str(envs / "arith_env.py")) == EnvSpec("arith_env", [str(envs)])
    assert resolve_spec(str(envs / "workdir_env")) == EnvSpec("workdir_env", [str(envs)])
    # A project's id is its name (verifiers maps lookup-env to the module lookup_env), its folder the import path.
    assert resolve_spec(str(envs / "lookup_env")) == EnvSpec("lookup-env", [str(envs / "lookup_env")])
    project = tmp_path / "myenv"
    (project / "src").mkdir(parents=True)
    (project / "pyproject.toml").write_text('[project]\nname = "my-env"\ndependencies = ["verifiers>=0.4", "nltk==3.9.2"]\n')
    assert resolve_spec(str(project)) == EnvSpec("my-env", [str(project / "src")], ["nltk==3.9.2"])


@pytest.mark.parametrize("spec", ["arith_env.py", "lookup_env", "workdir_env"])
def test_each_form_loads_the_environment_verifiers_builds(envs, spec):
    config, env = load(resolve_spec(str(envs / spec)), ["-r", "3", "--env.agent.runtime.type", "subprocess"])
    assert config.num_rollouts == 3
    assert env.taskset.bounded
    assert len(list(env.taskset)) > 0
    # Processes verifiers starts (a task's tool server) import the environment from the same place.
    assert resolve_spec(str(envs / spec)).paths[0] in os.environ["PYTHONPATH"].split(os.pathsep)


def test_a_flag_verifiers_refuses_gets_its_own_message(envs):
    spec = resolve_spec(str(envs / "arith_env.py"))
    with pytest.raises(ConfigRefused) as refused:
        load(spec, ["--env.taskset.bogus", "1"])
    assert "--env.taskset.bogus" in str(refused.value)
    assert "Extra inputs are not permitted (got '1')" in str(refused.value)
    with pytest.raises(ConfigRefused, match=r"--group-size[\s\S]*valid integer"):
        load(spec, ["-r", "zero"])


def test_an_unknown_environment_gets_verifiers_message():
    with pytest.raises(ConfigRefused, match="taskset 'nosuchenv' not found"):
        load(resolve_spec("nosuchenv"), [])


def test_clotho_refuses_what_it_cannot_honour(envs):
    spec = resolve_spec(str(envs / "arith_env.py"))
    with pytest.raises(ConfigRefused, match="--client.type train"):
        load(spec, ["--client.type", "train"])
    with pytest.raises(ConfigRefused, match="--push"):
        load(spec, ["--push"])
