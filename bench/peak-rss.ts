/**
 * Preloaded into a measured child (node --require): when it exits, writes its peak resident set
 * size in KiB to the file GW_PEAK_RSS_FILE names, so the parent reads the figure of the
 * program itself, whatever it is.
 */
import * as fs from "fs";

const target = process.env.GW_PEAK_RSS_FILE;
if (target) process.on("exit", () => fs.writeFileSync(target, `${process.resourceUsage().maxRSS}\n`));
