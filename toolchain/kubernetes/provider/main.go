// The pulumi-resource-kubernetes plugin: pulumi-kubernetes' own provider, served with the schema
// and Terraform mapping of the pinned release. bin/bootstrap writes the two embedded files from
// the schema.json and terraform-mapping.json the module ships (compact, the schema's version set),
// as the upstream command's generate step does; they are build outputs, ignored by git.
package main

import (
	_ "embed"

	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/provider"
	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version"
)

//go:embed schema-embed.json
var schema []byte

//go:embed terraform-mapping-embed.json
var terraformMapping []byte

func main() {
	provider.Serve("kubernetes", version.Version, schema, terraformMapping)
}
