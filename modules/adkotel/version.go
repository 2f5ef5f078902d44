package adkotel

// ScopeName is the instrumentation scope of every tracer and meter this
// package creates: the module's import path, as the OpenTelemetry
// specification recommends.
const ScopeName = "github.com/adkit/adk/modules/adkotel"

// Version is the version of this instrumentation, reported as the
// instrumentation scope version.
func Version() string {
	return "0.1.0"
}
