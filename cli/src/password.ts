import { CliError } from "./errors.js";
import type { Env } from "./profile.js";

/**
 * A password: `FEEDS_PASSWORD`, else asked on the terminal without echo, else the first line of
 * standard input (`… | feeds login`).
 */
export async function readPassword(env: Env, prompt: string): Promise<string> {
  const given = env["FEEDS_PASSWORD"];
  if (given) return given;
  const stdin = process.stdin;
  const password = stdin.isTTY ? await askHidden(prompt) : await firstLine();
  if (!password) throw new CliError("no password: type it when asked, or set FEEDS_PASSWORD");
  return password;
}

async function firstLine(): Promise<string> {
  let text = "";
  for await (const chunk of process.stdin) {
    text += String(chunk);
    if (text.includes("\n")) break;
  }
  return text.split(/\r?\n/)[0] ?? "";
}

function askHidden(prompt: string): Promise<string> {
  const stdin = process.stdin;
  process.stderr.write(prompt);
  stdin.setRawMode(true);
  stdin.setEncoding("utf8");
  stdin.resume();
  return new Promise((resolve, reject) => {
    let value = "";
    const finish = () => {
      stdin.off("data", onData);
      stdin.setRawMode(false);
      stdin.pause();
      process.stderr.write("\n");
    };
    const onData = (chunk: string) => {
      for (const ch of chunk) {
        if (ch === "\r" || ch === "\n") {
          finish();
          resolve(value);
          return;
        }
        if (ch === "\u0003" || ch === "\u0004") {
          finish();
          reject(new CliError("cancelled"));
          return;
        }
        value = ch === "\u007f" || ch === "\b" ? value.slice(0, -1) : value + ch;
      }
    };
    stdin.on("data", onData);
  });
}
