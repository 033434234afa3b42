#!/usr/bin/env node
// Part of `npm run build`: writes, in the compiled tree, a stub at each module path where
// stacks made before the house move look for their dynamic providers' operations.
const path = require("path");
const dist = path.resolve(__dirname, "..", "dist");
require(path.join(dist, "components", "providers", "registry")).writeEarlierPathStubs(dist);
