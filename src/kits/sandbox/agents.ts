import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { AgentSession, HarnessAgent } from '../../env/harness.js';
import { ensureVenv } from '../../env/python-venv.js';
import { clothoHome } from '../../store/paths.js';
import type { SandboxLimits } from './sandbox.js';

/** The Python agents' venvs are made from: the system's, which every sandbox shows. */
export const SANDBOX_PYTHON = '/usr/bin/python3';

/** The mini-swe-agent release Clotho installs and has tested its protocol with. */
export const MINI_SWE_AGENT_PIN = 'mini-swe-agent==2.4.6';

/** Where {@link miniSweAgent} finds mini-swe-agent, and how it runs it. */
export interface MiniSweAgentOptions {
  /**
   * A venv that has mini-swe-agent (its `bin/mini`), made from a Python the sandbox shows (under /usr); @default
   * `CLOTHO_MINI_SWE_AGENT_VENV`, else `<clotho home>/mini-swe-agent-venv`, installed on first use from PyPI
   * ({@link MINI_SWE_AGENT_PIN}) with {@link SANDBOX_PYTHON}.
   */
  venv?: string;
  /** Seconds each of its shell commands may take. @default 30 */
  commandTimeout?: number;
  /** Its sandbox limits (wall time above all); the harness's defaults fill the rest. */
  limits?: SandboxLimits;
}

/**
 * mini-swe-agent (PyPI `mini-swe-agent`) as a harness: its own CLI, `mini`, with its text-based config (one fenced
 * `mswea_bash_command` block per reply, `echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT` to finish), talking to the
 * session through litellm's OpenAI provider, in yolo mode and leaving at once when it submits.
 */
export function miniSweAgent(options: MiniSweAgentOptions = {}): HarnessAgent {
  // An empty variable is an unset one (a shell's `VAR= cmd`).
  const given = options.venv ?? (process.env.CLOTHO_MINI_SWE_AGENT_VENV || undefined);
  const venv = given ?? join(clothoHome(), 'mini-swe-agent-venv');
  return {
    name: 'mini-swe-agent',
    command: (session: AgentSession) => [
      join(venv, 'bin', 'mini'),
      '--yolo',
      '--exit-immediately',
      '--model-class',
      'litellm_textbased',
      '--model',
      `openai/${session.model}`,
      '--task',
      session.task,
      '--output',
      '/sandbox/.mini/trajectory.json',
      '--config',
      'mini_textbased.yaml',
      '--config',
      `model.model_kwargs.api_base=${session.baseUrl}`,
      '--config',
      'model.model_kwargs.api_key=clotho',
      '--config',
      `agent.step_limit=${session.maxCalls}`,
      '--config',
      'agent.cost_limit=0',
      '--config',
      `environment.cwd=${session.workspace}`,
      '--config',
      `environment.timeout=${options.commandTimeout ?? 30}`,
    ],
    env: {
      // Its first-run setup asks for a model on a terminal; costs of a model litellm does not price are not errors;
      // litellm reads its price list from the package rather than from the internet, which the sandbox does not reach.
      MSWEA_CONFIGURED: 'true',
      MSWEA_COST_TRACKING: 'ignore_errors',
      MSWEA_SILENT_STARTUP: '1',
      LITELLM_LOCAL_MODEL_COST_MAP: 'True',
      LITELLM_NUM_RETRIES: '0',
      NO_COLOR: '1',
      TERM: 'dumb',
      COLUMNS: '200',
    },
    // Read after `ensure`: the venv exists by then.
    get readOnlyBinds() {
      return [venv, ...pythonHome(venv)];
    },
    ...(options.limits ? { limits: options.limits } : {}),
    async ensure() {
      if (given) return;
      await installOnce(venv);
    },
  };
}

/**
 * Installs mini-swe-agent into `venv` once per process: every rollout makes an agent of its own, and those of a
 * group (or a retried attempt) that start while the first installs wait for the same install rather than race it.
 */
const installs = new Map<string, Promise<string>>();
function installOnce(venv: string): Promise<string> {
  let installing = installs.get(venv);
  if (!installing) {
    installing = ensureVenv({
      venv,
      stamp: MINI_SWE_AGENT_PIN,
      what: MINI_SWE_AGENT_PIN,
      pipArgs: async () => [MINI_SWE_AGENT_PIN],
      // The sandbox shows /usr: a venv of the system's Python runs there, one of a Python under /root would not.
      python: SANDBOX_PYTHON,
      notice: (line) => process.stderr.write(`clotho: ${line}\n`),
      hint: 'or set CLOTHO_MINI_SWE_AGENT_VENV to a venv that has mini-swe-agent',
    }).catch((error: unknown) => {
      installs.delete(venv); // the step's next attempt tries again
      throw error;
    });
    installs.set(venv, installing);
  }
  return installing;
}

/**
 * The installation a venv's Python comes from (`home` in its pyvenv.cfg, less `bin`), when it is outside the folders
 * every sandbox shows (a pyenv or conda Python): the sandbox must show it too, or the venv's `python` leads nowhere.
 */
function pythonHome(venv: string): string[] {
  const config = readFileSync(join(venv, 'pyvenv.cfg'), 'utf8');
  const home = /^home\s*=\s*(.+)$/m.exec(config)?.[1]?.trim();
  if (!home || home.startsWith('/usr/')) return [];
  return [dirname(home)];
}

const BASH_AGENT = new URL('./bash-agent.py', import.meta.url);

/**
 * A plain bash agent (`bash-agent.py`, Python's standard library only): mini-swe-agent's text protocol in fifty lines,
 * for tests and as the example of a harness of one's own. Needs nothing installed but python3.
 */
export function bashAgent(options: { limits?: SandboxLimits } = {}): HarnessAgent {
  return {
    name: 'bash',
    command: (session: AgentSession) => ['python3', '/sandbox/.agent/bash-agent.py', String(session.maxCalls), session.task],
    files: { '.agent/bash-agent.py': readFileSync(BASH_AGENT, 'utf8') },
    ...(options.limits ? { limits: options.limits } : {}),
  };
}
