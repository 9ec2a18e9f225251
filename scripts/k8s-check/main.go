// k8s-check validates rendered Kubernetes manifests offline, against the API's Go types.
//
//	helm template ... | k8s-check            check every object; exit 1 naming each bad one
//	k8s-check -json a.yaml b.yaml            the same, and print the objects as a JSON array
//	k8s-check -compose docker-compose.yml    load a Compose file (schema, interpolation, merges)
//	                                         and print {"services": [...], "environment":
//	                                         {service: {variable: value}}} as JSON
//
// Each object is strict-decoded into the typed object of its apiVersion and kind (client-go's
// scheme, plus the prometheus-operator types for ServiceMonitor): an unknown kind, a misspelt or
// misplaced field, a duplicate field or a value of the wrong type fails, naming the field's path.
// A few rules the API server would enforce on top (DNS names, a Deployment's selector matching
// its pod labels) are checked too. No schema is fetched: everything is compiled in.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/compose-spec/compose-go/v2/cli"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/validation"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
)

func main() {
	asJSON := flag.Bool("json", false, "print the checked objects as a JSON array on stdout")
	compose := flag.Bool("compose", false, "load the given Compose file and print its service names and environments as JSON")
	flag.Parse()
	if *compose {
		if flag.NArg() != 1 {
			fail("-compose takes one file")
		}
		if err := checkCompose(flag.Arg(0)); err != nil {
			fail(err.Error())
		}
		return
	}
	docs, err := readDocs(flag.Args())
	if err != nil {
		fail(err.Error())
	}
	decoder, err := newDecoder()
	if err != nil {
		fail(err.Error())
	}
	var problems []string
	var objects []json.RawMessage
	kinds := map[string]int{}
	for _, d := range docs {
		obj, js, err := checkDoc(decoder, d)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %s: %v", d.where(), describe(js), err))
			continue
		}
		if obj == nil {
			continue // a document of comments only
		}
		kinds[obj.GetObjectKind().GroupVersionKind().Kind]++
		objects = append(objects, js)
	}
	for _, p := range problems {
		fmt.Fprintf(os.Stderr, "k8s-check: FAIL %s\n", p)
	}
	if len(problems) > 0 {
		fmt.Fprintf(os.Stderr, "k8s-check: %d of %d objects failed\n", len(problems), len(problems)+len(objects))
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "k8s-check: %d objects ok (%s)\n", len(objects), summary(kinds))
	if *asJSON {
		out, _ := json.Marshal(objects)
		fmt.Println(string(out))
	}
}

func fail(msg string) {
	fmt.Fprintf(os.Stderr, "k8s-check: %s\n", msg)
	os.Exit(2)
}

// One YAML document and where it came from (helm template writes "# Source: <template>").
type doc struct {
	file, source string
	index        int
	data         []byte
}

func (d doc) where() string {
	w := fmt.Sprintf("%s document %d", d.file, d.index)
	if d.source != "" {
		w += " (" + d.source + ")"
	}
	return w
}

var sourceLine = regexp.MustCompile(`(?m)^# Source: (.+)$`)

func readDocs(files []string) ([]doc, error) {
	if len(files) == 0 {
		return splitDocs("stdin", os.Stdin)
	}
	var all []doc
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			return nil, err
		}
		docs, err := splitDocs(f, fh)
		_ = fh.Close()
		if err != nil {
			return nil, err
		}
		all = append(all, docs...)
	}
	return all, nil
}

func splitDocs(name string, r io.Reader) ([]doc, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(r))
	var docs []doc
	for i := 1; ; i++ {
		data, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		d := doc{file: name, index: i, data: data}
		if m := sourceLine.FindSubmatch(data); m != nil {
			d.source = string(m[1])
		}
		docs = append(docs, d)
	}
}

func newDecoder() (runtime.Decoder, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := monitoringv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	return serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer(), nil
}

// checkDoc strict-decodes one document; nil object for a document without content.
func checkDoc(decoder runtime.Decoder, d doc) (runtime.Object, json.RawMessage, error) {
	js, err := yaml.YAMLToJSON(d.data)
	if err != nil {
		return nil, nil, fmt.Errorf("not YAML: %w", err)
	}
	if t := bytes.TrimSpace(js); len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return nil, nil, nil
	}
	obj, _, err := decoder.Decode(d.data, nil, nil)
	if err != nil {
		if strict, ok := runtime.AsStrictDecodingError(err); ok {
			msgs := make([]string, 0, len(strict.Errors()))
			for _, e := range strict.Errors() {
				msgs = append(msgs, e.Error())
			}
			return nil, js, errors.New(strings.Join(msgs, "; "))
		}
		return nil, js, err
	}
	if err := checkRules(obj); err != nil {
		return nil, js, err
	}
	return obj, js, nil
}

// Rules the API server applies beyond the types, cheap enough to repeat here.
func checkRules(obj runtime.Object) error {
	meta, ok := obj.(metav1.Object)
	if !ok {
		return nil
	}
	if meta.GetName() == "" {
		return errors.New("metadata.name is empty")
	}
	if errs := validation.IsDNS1123Subdomain(meta.GetName()); len(errs) > 0 {
		return fmt.Errorf("metadata.name %q: %s", meta.GetName(), strings.Join(errs, "; "))
	}
	if deployment, ok := obj.(*appsv1.Deployment); ok {
		if deployment.Spec.Selector == nil {
			return errors.New("spec.selector is required")
		}
		selector, err := metav1.LabelSelectorAsSelector(deployment.Spec.Selector)
		if err != nil {
			return fmt.Errorf("spec.selector: %w", err)
		}
		if selector.Empty() || !selector.Matches(labels.Set(deployment.Spec.Template.Labels)) {
			return errors.New("spec.selector does not match spec.template.metadata.labels")
		}
	}
	return nil
}

// "Kind name" of a document, as far as it can be read.
func describe(js json.RawMessage) string {
	var head struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if json.Unmarshal(js, &head) != nil || head.Kind == "" {
		return "object"
	}
	return strings.TrimSpace(head.Kind + " " + head.Metadata.Name)
}

func summary(kinds map[string]int) string {
	names := make([]string, 0, len(kinds))
	for k := range kinds {
		names = append(names, k)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, k := range names {
		parts[i] = fmt.Sprintf("%s %d", k, kinds[k])
	}
	return strings.Join(parts, ", ")
}

// checkCompose loads a Compose file the way `docker compose config` does (schema validation,
// variable interpolation from the environment, YAML anchors and merges) and prints its services
// and each one's environment.
func checkCompose(file string) error {
	abs, err := filepath.Abs(file)
	if err != nil {
		return err
	}
	opts, err := cli.NewProjectOptions([]string{abs},
		cli.WithOsEnv,
		cli.WithWorkingDirectory(filepath.Dir(abs)),
		cli.WithName("check"),
	)
	if err != nil {
		return err
	}
	project, err := opts.LoadProject(context.Background())
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	environment := map[string]map[string]*string{}
	for name, svc := range project.Services {
		environment[name] = svc.Environment
	}
	out, err := json.Marshal(map[string]any{"services": project.ServiceNames(), "environment": environment})
	if err != nil {
		return err
	}
	fmt.Println(string(out))
	return nil
}
