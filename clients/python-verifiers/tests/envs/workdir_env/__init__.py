"""An agent that works in its runtime: verifiers' bash harness writes a file, the reward reads it from the runtime.

The taskset's default harness is verifiers' bash chat program (a `bash` tool over the runtime); the tests run it with
`--env.agent.runtime.type subprocess`. `wrote` reads `answer.txt` back from the rollout's runtime.
"""

import verifiers.v1 as vf

WORDS = ["heron", "larch"]


class WorkdirData(vf.TaskData):
    word: str


class WorkdirTask(vf.Task[WorkdirData]):
    @vf.reward(weight=1.0)
    async def wrote(self, trace: vf.Trace, runtime: vf.Runtime) -> float:
        result = await runtime.run(["cat", "answer.txt"], {})
        return float(result.exit_code == 0 and result.stdout.strip() == self.data.word)


class WorkdirTaskset(vf.Taskset[WorkdirTask, vf.TasksetConfig]):
    def load(self) -> list[WorkdirTask]:
        return [
            WorkdirTask(WorkdirData(prompt=f"Write the word {word} into the file answer.txt, then say done.", word=word), self.config.task)
            for word in WORDS
        ]


__all__ = ["WorkdirTaskset"]
