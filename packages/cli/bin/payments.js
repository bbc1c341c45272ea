#!/usr/bin/env node
// The payments executable: runs the built CLI (npm run build, or the root npm install && npm start, builds it).
import "../dist/main.js";
