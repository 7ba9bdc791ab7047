package main

// The API server's part: every custom object reaches Kueue with its CRD's
// OpenAPI defaults applied (stopPolicy None, queueingStrategy BestEffortFIFO,
// preemption Never, flavorFungibility, JobSet replicas, ...). The oracle applies
// them with the API server's own structural defaulting over the CRDs of the
// pinned modules, which hack/build-oracle.sh puts beside the binary. And the
// Workload the job controller creates must pass its CRD's validation (the
// OpenAPI schema, maxItems 18 pod sets and all, then its CEL rules), or the
// API server refuses it and the job waits forever.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	apiextensions "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	celvalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"
)

type schemaDefaults map[schema.GroupVersionKind]*structuralschema.Structural

// crdValidators: per kind, the API server's validators of a custom resource.
type crdValidator struct {
	openAPI    apiservervalidation.SchemaValidator
	structural *structuralschema.Structural
	cel        *celvalidation.Validator
}

var crdValidators = map[schema.GroupVersionKind]*crdValidator{}

// validateCreate is what the API server checks of a new custom resource of a
// kind with a CRD beside the oracle: nil when it would store it.
func validateCreate(gvk schema.GroupVersionKind, obj runtime.Object) error {
	v, ok := crdValidators[gvk]
	if !ok {
		return nil
	}
	// As the API server decodes it: integers as int64, which CEL rules compare.
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return err
	}
	errs := apiservervalidation.ValidateCustomResource(nil, u, v.openAPI)
	if v.cel != nil {
		celErrs, _ := v.cel.Validate(context.Background(), nil, v.structural, u, nil, celconfig.RuntimeCELCostBudget)
		errs = append(errs, celErrs...)
	}
	return errs.ToAggregate()
}

func loadCRDDefaults(dir string) (schemaDefaults, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no CRDs in %s (run hack/build-oracle.sh)", dir)
	}
	out := schemaDefaults{}
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(raw, &crd); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		for _, v := range crd.Spec.Versions {
			if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
				continue
			}
			var internal apiextensions.JSONSchemaProps
			if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, &internal, nil); err != nil {
				return nil, fmt.Errorf("%s %s: %w", file, v.Name, err)
			}
			structural, err := structuralschema.NewStructural(&internal)
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", file, v.Name, err)
			}
			gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind}
			out[gvk] = structural
			validator, _, err := apiservervalidation.NewSchemaValidator(&internal)
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", file, v.Name, err)
			}
			crdValidators[gvk] = &crdValidator{openAPI: validator, structural: structural,
				cel: celvalidation.NewValidator(structural, true, celconfig.PerCallLimit)}
		}
	}
	return out, nil
}

// apply returns the document with its CRD's defaults, or as it is for kinds
// without a CRD (built-in types).
func (d schemaDefaults) apply(doc []byte) ([]byte, error) {
	var obj map[string]any
	if err := json.Unmarshal(doc, &obj); err != nil {
		return nil, err
	}
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return doc, nil
	}
	s, ok := d[gv.WithKind(kind)]
	if !ok {
		return doc, nil
	}
	structuraldefaulting.Default(obj, s)
	return json.Marshal(obj)
}
