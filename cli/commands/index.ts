import type { Command } from 'commander';
import type { CliIO } from '../io.ts';
import { registerValidate } from './validate.ts';
import { registerBuild } from './build.ts';
import { registerServe } from './serve.ts';
import { registerWorker } from './worker.ts';
import { registerKey } from './key.ts';
import { registerSecret } from './secret.ts';
import { registerFilter } from './filter.ts';
import { registerPlan } from './plan.ts';
import { registerApply } from './apply.ts';
import { registerWatch } from './watch.ts';
import { registerDev } from './dev.ts';
import { registerWebhook } from './webhook.ts';
import { registerAutomation } from './automation.ts';
import { registerDelivery } from './delivery.ts';
import { registerRun } from './run.ts';
import { registerMigrate } from './migrate.ts';

/** A command module adds its commands to the program. */
export type RegisterCommand = (program: Command, io: CliIO) => void;

/**
 * Every command module, in help order: the offline ones, then the definitions workflow, then
 * the team and operational groups. Each owner adds one import and one entry here.
 */
export const COMMANDS: RegisterCommand[] = [
  // Offline, on a factory repo.
  registerValidate,
  registerBuild,
  // Online: the definitions half.
  registerPlan,
  registerApply,
  registerWatch,
  registerDev,
  registerServe,
  registerWorker,
  registerMigrate,
  // Online: team and operations.
  registerSecret,
  registerKey,
  registerWebhook,
  registerDelivery,
  registerAutomation,
  registerRun,
  registerFilter,
];
