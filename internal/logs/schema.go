package logs

// SchemaVersion is the version of the log schema this code writes:
// node.started carries it in SchemaKey. It rises when an event or a field
// is renamed or removed, or a field's JSON type changes; additions keep
// it. docs/logs.md's changelog says what each version changed, and
// docs/docs_test.go fails when a field recorded for this version
// (docs/testdata/log-schema-v<N>.txt) disappears or changes its type.
//
// The versions:
//
//  1. until node.started carried the version: a delivery's sender
//     incarnation in "inc" (V1FromIncarnationKey), a view's
//     coordinator incarnation in "coordinator_inc"
//     (V1CoordinatorIncarnationKey);
//  2. "from_incarnation" and "coordinator_incarnation"; node.started
//     carries "schema".
//
// A reader of version N reads every version up to N: the logs' own
// readers (cmd/huddle/internal/logcheck, huddle report) take a renamed
// field by its old name when the new one is absent.
const SchemaVersion = 2

// SchemaKey is node.started's field that names the schema's version. A
// node.started without it was written by version 1.
const SchemaKey = "schema"

// The fields of version 1 that version 2 renamed.
const (
	V1FromIncarnationKey        = "inc"             // deliver: now FromIncarnationKey
	V1CoordinatorIncarnationKey = "coordinator_inc" // view.installed: now CoordinatorIncarnationKey
)
