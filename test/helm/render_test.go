package helm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

// manifests holds one rendering of the chart, each document decoded into
// its API type.
type manifests struct {
	deployments map[string]*appsv1.Deployment
	services    map[string]*corev1.Service
	secrets     map[string]*corev1.Secret
	pdbs        map[string]*policyv1.PodDisruptionBudget
	hpas        map[string]*autoscalingv2.HorizontalPodAutoscaler
	ingresses   map[string]*networkingv1.Ingress
	policies    map[string]*networkingv1.NetworkPolicy
}

// decode splits helm template's output into documents and decodes each
// strictly: a duplicate key, a field its type lacks, a kind or apiVersion
// the chart should not render fails.
func decode(out string) (*manifests, error) {
	m := &manifests{
		deployments: map[string]*appsv1.Deployment{},
		services:    map[string]*corev1.Service{},
		secrets:     map[string]*corev1.Secret{},
		pdbs:        map[string]*policyv1.PodDisruptionBudget{},
		hpas:        map[string]*autoscalingv2.HorizontalPodAutoscaler{},
		ingresses:   map[string]*networkingv1.Ingress{},
		policies:    map[string]*networkingv1.NetworkPolicy{},
	}
	for doc := range strings.SplitSeq("\n"+out, "\n---") {
		if strings.TrimSpace(stripComments(doc)) == "" {
			continue
		}
		js, err := yaml.YAMLToJSONStrict([]byte(doc))
		if err != nil {
			return nil, fmt.Errorf("%w in\n%s", err, doc)
		}
		var tm metav1.TypeMeta
		if err := json.Unmarshal(js, &tm); err != nil {
			return nil, err
		}
		var obj interface{ GetName() string }
		var into func()
		switch tm.APIVersion + " " + tm.Kind {
		case "apps/v1 Deployment":
			o := &appsv1.Deployment{}
			obj, into = o, func() { m.deployments[o.Name] = o }
		case "v1 Service":
			o := &corev1.Service{}
			obj, into = o, func() { m.services[o.Name] = o }
		case "v1 Secret":
			o := &corev1.Secret{}
			obj, into = o, func() { m.secrets[o.Name] = o }
		case "policy/v1 PodDisruptionBudget":
			o := &policyv1.PodDisruptionBudget{}
			obj, into = o, func() { m.pdbs[o.Name] = o }
		case "autoscaling/v2 HorizontalPodAutoscaler":
			o := &autoscalingv2.HorizontalPodAutoscaler{}
			obj, into = o, func() { m.hpas[o.Name] = o }
		case "networking.k8s.io/v1 Ingress":
			o := &networkingv1.Ingress{}
			obj, into = o, func() { m.ingresses[o.Name] = o }
		case "networking.k8s.io/v1 NetworkPolicy":
			o := &networkingv1.NetworkPolicy{}
			obj, into = o, func() { m.policies[o.Name] = o }
		default:
			return nil, fmt.Errorf("unexpected %s %s in\n%s", tm.APIVersion, tm.Kind, doc)
		}
		dec := json.NewDecoder(bytes.NewReader(js))
		dec.DisallowUnknownFields()
		if err := dec.Decode(obj); err != nil {
			return nil, fmt.Errorf("%s: %w in\n%s", tm.Kind, err, doc)
		}
		if obj.GetName() == "" {
			return nil, fmt.Errorf("%s without a name", tm.Kind)
		}
		into()
	}
	return m, nil
}

// stripComments drops the "# Source:" lines helm writes before documents.
func stripComments(doc string) string {
	var b strings.Builder
	for line := range strings.SplitSeq(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

func metav1LabelSelector(s *metav1.LabelSelector) (labels.Selector, error) {
	return metav1.LabelSelectorAsSelector(s)
}

func itoa(i int32) string { return fmt.Sprint(i) }
