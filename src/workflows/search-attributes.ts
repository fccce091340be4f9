import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/** Search attributes that let the Temporal UI filter rollouts (registered by temporal-dev/). */
export const ENVIRONMENT = defineSearchAttributeKey('ClothoEnvironment', SearchAttributeType.KEYWORD);
export const RUN_ID = defineSearchAttributeKey('ClothoRunId', SearchAttributeType.KEYWORD);
export const ITEM_INDEX = defineSearchAttributeKey('ClothoItemIndex', SearchAttributeType.INT);
export const STATUS = defineSearchAttributeKey('ClothoStatus', SearchAttributeType.KEYWORD);
export const MEAN_SCORE = defineSearchAttributeKey('ClothoMeanScore', SearchAttributeType.DOUBLE);
/** Assistant turns the group's longest episode took: `ClothoTurns > 20` finds long episodes. */
export const TURNS = defineSearchAttributeKey('ClothoTurns', SearchAttributeType.INT);
/** Tool calls Clotho executed over the group's trajectories. */
export const TOOL_CALLS = defineSearchAttributeKey('ClothoToolCalls', SearchAttributeType.INT);
/** The Clotho version that started the run (env-runs, their groups and evaluations, batchers): `clotho runs` lists it. */
export const VERSION = defineSearchAttributeKey('ClothoVersion', SearchAttributeType.KEYWORD);
/** The memo field with the same version, for clusters without Clotho's search attributes. */
export const VERSION_MEMO = 'clothoVersion';
