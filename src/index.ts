/**
 * Clotho's public entry: what an environment imports (`import { defineEnvironment, z } from 'clotho'`).
 * Environments in this repository import only this, so each is an example a user can copy into a package of their own.
 * Every name is listed here (no `export *`); `npm run docs` writes this page (docs/reference.md) from their doc comments.
 * @packageDocumentation
 */
export { z } from 'zod';
export {
  defineEnvironment,
  fromItems,
  type AdvantageContext,
  type EnvConfig,
  type EnvironmentDefinition,
  type EnvironmentSpec,
  type EvaluateContext,
  type EvaluationMetrics,
  type GroupContext,
  type ItemSource,
  type JudgeContext,
  type JsonSafe,
  type JudgeRequest,
  type Liveness,
  type MaybePromise,
  type ModelCallOptions,
  type ModelClient,
  type ParseContext,
  type RescoreContext,
  type ScoreContext,
  type ScoreResult,
  type StepContext,
  type StepResult,
  type ToolOffer,
  type ToolResultMessage,
} from './env/define.js';
export {
  defineTool,
  executeToolCall,
  parseToolCalls,
  toOpenAITool,
  ToolError,
  type MalformedToolCall,
  type Tool,
  type ToolCallOutcome,
  type ToolCallRequest,
  type ToolCallResult,
  type ToolContext,
} from './env/tools.js';
export { loadJsonl, resolveDataset, type DatasetSource } from './env/datasets.js';
export {
  HARNESS_AGENT_LIMITS,
  HARNESS_ENDS,
  HarnessOutcomeSchema,
  type AgentSession,
  type HarnessAgent,
  type HarnessCheck,
  type HarnessEnd,
  type HarnessOutcome,
  type HarnessSpec,
} from './env/harness.js';
export { loadTable, tableFormatOf, type LoadTableOptions, type TableFormat } from './env/tables.js';
export { ConfigError } from './config/config-error.js';
export { playEpisode, resolveEnvConfig, type PlayOptions } from './env/testing.js';
export type { AssistantTurn, Episode } from './env/episode.js';
export { closeMcpServers, mcpTools, McpServerConfigSchema, type McpServerConfig } from './env/mcp.js';
export type { BaseEnvConfig } from './config/schemas.js';
export type { Message } from './schema/scored-data.js';
export { choiceLetters, extractChoiceLetter, lastBoxed, stripThinking } from './env/answers.js';
export { lengthPenalty, type LengthPenaltyOptions, type LengthPenaltyRule } from './env/length-penalty.js';
export {
  extractMathAnswer,
  goldMathAnswer,
  mathAnswersEqual,
  normalizeMathAnswer,
  type MathCompareOptions,
  type MathExtractOptions,
} from './env/math-answer.js';
export {
  combineRewards,
  defineReward,
  REWARD_FUNCTIONS,
  rewardSpecsField,
  toScoreResult,
  type CombinedReward,
  type CombineRewardsOptions,
  type RewardDefinition,
  type RewardEntry,
  type RewardFn,
  type RewardNormalization,
  type RewardRegistry,
  type RewardSpec,
  type WeightedReward,
} from './env/rewards.js';
export { problemsError } from './env/problems.js';
export { hashSeed, seededRandom, type SeededRandom } from './env/random.js';

// The kits: parts of some environments (games, sandboxed code, pairwise judging, images), built on the core above.
export {
  actionTools,
  commandFromCall,
  parseCommand,
  readMove,
  type GameAction,
  type GameCommand,
  type GameMove,
  type Unreadable,
} from './kits/games/moves.js';
export {
  defineGame,
  GAME_CONFIG,
  type Game,
  type GameConfig,
  type GameContext,
  type GameItem,
  type GameOutcome,
  type GameSlot,
} from './kits/games/game.js';
export {
  DEFAULT_SANDBOX_LIMITS,
  runSandboxed,
  SANDBOX_DIR,
  SANDBOX_PATH,
  type SandboxKill,
  type SandboxLimits,
  type SandboxOptions,
  type SandboxResult,
} from './kits/sandbox/sandbox.js';
export { bashAgent, MINI_SWE_AGENT_PIN, miniSweAgent, SANDBOX_PYTHON, type MiniSweAgentOptions } from './kits/sandbox/agents.js';
export {
  formatConversation,
  judgedPair,
  PAIRWISE_JUDGE_SYSTEM_PROMPT,
  pairwiseJudgePrompt,
  pairwiseRequestIds,
  pairwiseRequests,
  parseBoxedChoice,
  preferenceOf,
  tallyPairwise,
  type PairwisePromptOptions,
  type PairwiseRequestOptions,
  type PairwiseTally,
} from './kits/judging/pairwise.js';
export { imageDataUrl, imageMediaType, imagePart, parseDataUrl, textPart, type ImageUrlPart, type TextPart } from './kits/images/images.js';
export { decodePng, encodePng, type RgbaImage } from './kits/images/png.js';
