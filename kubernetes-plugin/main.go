// Command pulumi-resource-kubernetes is the Pulumi Kubernetes provider's plugin, built from the
// provider's Go module as the Go module proxy serves it (github.com/pulumi/pulumi-kubernetes/provider/v4,
// at the version go.mod pins): this program only hands the provider's exported Serve its name,
// version, schema and Terraform mapping.
//
// The two files it embeds are not in the module (the provider's own build writes them):
// scripts/bootstrap-kubernetes.sh writes them beside a copy of this file before it builds, from
// the module's cmd/pulumi-resource-kubernetes/schema.json (its "version" set to the plugin's) and
// terraform-mapping.json (as it is, compacted). They are build outputs, never committed.
package main

import (
	_ "embed"

	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/provider"
	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version"
)

// The schema the engine asks for (GetSchema) and reads resources' input properties from on import.
//
//go:embed schema-embed.json
var schema []byte

// The answer to GetMapping("terraform"), for converting Terraform programs.
//
//go:embed terraform-mapping-embed.json
var terraformMapping []byte

func main() {
	// version.Version is set at link time (-X) to the version of @pulumi/kubernetes, the SDK whose
	// resources ask for this plugin.
	provider.Serve("kubernetes", version.Version, schema, terraformMapping)
}
