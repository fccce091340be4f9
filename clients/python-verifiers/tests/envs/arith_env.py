"""Single-turn arithmetic with a reward and a metric, written as a verifiers taskset (for Clotho's tests).

Each task asks "What is a + b?"; `correct` rewards the exact sum in the reply, `brevity` is a metric. Its default
harness is verifiers' bash chat program; the tests run it with `--env.agent.harness.id null` (no tools).
"""

import verifiers.v1 as vf


class ArithData(vf.TaskData):
    answer: int


class ArithTaskConfig(vf.TaskConfig):
    broken: bool = False
    """The reward raises (an episode that fails in task code: TaskError)."""


class ArithTask(vf.Task[ArithData, vf.State, ArithTaskConfig]):
    @vf.reward(weight=1.0)
    async def correct(self, trace: vf.Trace) -> float:
        if self.config.broken:
            raise ValueError("the reward is broken on purpose")
        return float(trace.last_reply.strip() == str(self.data.answer))

    @vf.metric
    async def brevity(self, trace: vf.Trace) -> float:
        return 1.0 / (1 + len(trace.last_reply))


class ArithConfig(vf.TasksetConfig):
    task: ArithTaskConfig = ArithTaskConfig()
    count: int = 4
    """How many tasks the taskset holds."""


class ArithTaskset(vf.Taskset[ArithTask, ArithConfig]):
    def load(self) -> list[ArithTask]:
        return [
            ArithTask(ArithData(prompt=f"What is {i} + {i + 3}? Reply with the number only.", answer=2 * i + 3), self.config.task)
            for i in range(self.config.count)
        ]


__all__ = ["ArithTaskset"]
