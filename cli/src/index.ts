import { parseArgs } from "node:util";
import { str, type Command, type Options, type Values } from "./command.js";
import { feedCommands } from "./commands-feed.js";
import { operatorCommands } from "./commands-operator.js";
import { Context, type Io } from "./context.js";
import { describeError, exitCodeOf, usageError } from "./errors.js";
import type { Env } from "./profile.js";

// `feeds <command> [arguments] [options]`: the public API from the command line, through the SDK.

const commands: Command[] = [...operatorCommands, ...feedCommands];

const globalOptions = {
  url: { type: "string" },
  json: { type: "boolean" },
  profile: { type: "string" },
  help: { type: "boolean", short: "h" },
} satisfies Options;

const globalHelp = [
  "--url <url>        the system's base URL (else FEEDS_URL, else the one the profile logged in to)",
  "--json             print the API's answer as JSON",
  "--profile <name>   the profile to use (else FEEDS_PROFILE, else default)",
];

function usage(): string {
  const width = Math.max(...commands.map((c) => `${c.name} ${c.args}`.length));
  return [
    "usage: feeds <command> [arguments] [options]",
    "",
    ...commands.map((c) => `  ${`${c.name} ${c.args}`.padEnd(width)}   ${c.summary}`),
    "",
    ...globalHelp.map((l) => `  ${l}`),
    "",
    "The profile (the operator session, the tenants created) is <dir>/<profile>.json, readable by you alone;",
    "<dir> is FEEDS_CONFIG_DIR, else $XDG_CONFIG_HOME/feeds, else ~/.config/feeds.",
    "FEEDS_API_KEY and FEEDS_API_SECRET, when set, are the tenant's credentials instead of the profile's.",
    "feeds <command> --help: that command's options.",
  ].join("\n");
}

function commandHelp(c: Command): string {
  return [`usage: feeds ${c.name}${c.args ? ` ${c.args}` : ""} [options]`, "", c.summary, "", ...[...c.optionHelp, ...globalHelp].map((l) => `  ${l}`)].join("\n");
}

/** The command named by the leading words (`tenant create`), and the arguments after them. */
function findCommand(positionals: string[]): { command: Command; args: string[] } {
  for (const words of [2, 1]) {
    const name = positionals.slice(0, words).join(" ");
    const command = commands.find((c) => c.name === name);
    if (command) return { command, args: positionals.slice(words) };
  }
  const first = positionals[0] ?? "";
  const group = commands.filter((c) => c.name.startsWith(`${first} `)).map((c) => c.name);
  if (group.length > 0) throw usageError(`feeds ${first} needs one of: ${group.map((n) => n.slice(first.length + 1)).join(", ")}`);
  throw usageError(`unknown command "${positionals.join(" ")}" (feeds help lists the commands)`);
}

/** parseArgs's messages, shortened to one line. */
function parse(args: string[], options: Options, strict: boolean): { values: Values; positionals: string[] } {
  try {
    const { values, positionals } = parseArgs({ args, options, strict, allowPositionals: true });
    return { values, positionals };
  } catch (e) {
    const message = e instanceof Error ? (e.message.split(/\. |\n/)[0] ?? e.message) : String(e);
    throw usageError(message.replace(/\.$/, ""));
  }
}

/** Runs one command line; answers the exit code. Failures print one line on stderr. */
export async function run(argv: string[], env: Env, io: Io = defaultIo): Promise<number> {
  let ctx: Context | undefined;
  try {
    // First find the command (every command's options known, so no value passes for a word)...
    const everyOption: Options = { ...globalOptions };
    for (const c of commands) Object.assign(everyOption, c.options);
    const first = parse(argv, everyOption, false);
    if (first.positionals.length === 0 || first.positionals[0] === "help") {
      const named = first.positionals.slice(1);
      io.stdout(`${named.length > 0 ? commandHelp(findCommand(named).command) : usage()}\n`);
      return 0;
    }
    const { command } = findCommand(first.positionals);
    // ...then read the line strictly against that command's options.
    const { values, positionals } = parse(argv, { ...globalOptions, ...command.options }, true);
    if (values["help"] === true) {
      io.stdout(`${commandHelp(command)}\n`);
      return 0;
    }
    const args = positionals.slice(command.name.split(" ").length);
    const [min, max] = command.positionals;
    if (args.length < min || args.length > max) {
      throw usageError(`usage: feeds ${command.name}${command.args ? ` ${command.args}` : ""} (feeds ${command.name} --help)`);
    }
    ctx = new Context(env, { url: str(values, "url"), json: values["json"] === true, profile: str(values, "profile") ?? env["FEEDS_PROFILE"] ?? "default" }, io);
    await command.run(ctx, args, values);
    return 0;
  } catch (e) {
    io.stderr(`feeds: ${describeError(e, ctx?.credential ?? "none", ctx?.store.name ?? "default").replace(/\s*\n\s*/g, " ")}\n`);
    return exitCodeOf(e);
  }
}

const defaultIo: Io = {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
};
