package vm

// ScriptPrelude is what Run puts before every script (iproute2's ip and
// tc as functions), for the external tests that run a script the way the
// guest's /init does.
const ScriptPrelude = scriptPrelude
