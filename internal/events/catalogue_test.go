package events

import (
	"slices"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/hashgate/hashgate/api"
)

// TestCatalogueMatchesSpec: the spec's EventType enum lists exactly the catalogue's types, in
// its order.
func TestCatalogueMatchesSpec(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromData(api.Spec)
	if err != nil {
		t.Fatal(err)
	}
	ref := doc.Components.Schemas["EventType"]
	if ref == nil || ref.Value == nil {
		t.Fatal("no EventType schema")
	}
	var spec, ours []string
	for _, v := range ref.Value.Enum {
		spec = append(spec, v.(string))
	}
	for _, i := range Catalogue {
		ours = append(ours, string(i.Type))
	}
	if !slices.Equal(spec, ours) {
		t.Fatalf("spec %v\ncatalogue %v", spec, ours)
	}
}
