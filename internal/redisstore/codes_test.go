package redisstore

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	// luaString is a quoted Lua string literal (no long strings are used).
	luaString = regexp.MustCompile(`'(\\.|[^'\\])*'|"(\\.|[^"\\])*"`)
	// negativeLiteral is a minus that makes a number negative: after
	// return, an operator, a bracket or a comma, not between two operands.
	negativeLiteral = regexp.MustCompile(`(^|[=(,{<>]|\breturn|\bor|\band|\bnot)\s*-\s*\d`)
	// upperName is a name spelt like a constant.
	upperName = regexp.MustCompile(`\b[A-Z][A-Z0-9_]+\b`)
	// localUpper declares a script's own constant.
	localUpper = regexp.MustCompile(`\blocal\s+([A-Z][A-Z0-9_]+)\b`)
)

// luaCode is src without comments and string literals.
func luaCode(src string) string {
	var b strings.Builder
	for line := range strings.Lines(src) {
		line = luaString.ReplaceAllString(line, "''")
		if i := strings.Index(line, "--"); i >= 0 {
			line = line[:i]
		}
		b.WriteString(strings.TrimRight(line, " \t\r\n"))
		b.WriteString("\n")
	}
	return b.String()
}

func TestScriptsUseNamedCodes(t *testing.T) {
	files, err := filepath.Glob("lua/*.lua")
	if err != nil || len(files) == 0 {
		t.Fatalf("no Lua scripts found: %v", err)
	}
	declared := map[string]bool{"KEYS": true, "ARGV": true}
	for _, c := range scriptCodes {
		declared[c.name] = true
	}
	// The admission step's own constants are visible to the scripts it is
	// put ahead of.
	step := luaCode(admissionStep)
	stepLocals := map[string]bool{}
	for _, m := range localUpper.FindAllStringSubmatch(step, -1) {
		stepLocals[m[1]] = true
	}
	used := map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		code := luaCode(string(b))
		locals := map[string]bool{}
		for _, m := range localUpper.FindAllStringSubmatch(code, -1) {
			locals[m[1]] = true
		}
		for i, line := range strings.Split(code, "\n") {
			if negativeLiteral.MatchString(line) {
				t.Errorf("%s:%d: a bare negative number (name it in codes.go): %s", f, i+1, strings.TrimSpace(line))
			}
			for _, name := range upperName.FindAllString(line, -1) {
				used[name] = true
				if !declared[name] && !locals[name] && !stepLocals[name] {
					t.Errorf("%s:%d: %s is neither in codes.go's scriptCodes nor a local of the script", f, i+1, name)
				}
			}
		}
	}
	names := map[string]bool{}
	returned := map[int64]string{}
	for _, c := range scriptCodes {
		if names[c.name] {
			t.Errorf("%s is declared twice", c.name)
		}
		names[c.name] = true
		if c.returned {
			if other, ok := returned[c.value]; ok {
				t.Errorf("return codes %s and %s share the value %d", c.name, other, c.value)
			}
			returned[c.value] = c.name
		}
		if !used[c.name] {
			t.Errorf("%s is used by no script", c.name)
		}
	}
}

// TestNegativeLiteralCheck holds the checker of TestScriptsUseNamedCodes
// to what it must and must not flag.
func TestNegativeLiteralCheck(t *testing.T) {
	for _, tc := range []struct {
		line string
		bare bool
	}{
		{"return -1", true},
		{"  return -3", true},
		{"rank = -2", true},
		{"out[#out + 1] = hold and tonumber(hold) or -1", true},
		{"return {1, -1}", true},
		{"if n == -1 then", true},
		{"return NO_EVENT", false},
		{"served = math.max(opensAt - 1, now)", false},
		{"redis.call('LTRIM', K.changes, 0, MAX_CHANGES - 1)", false},
		{"redis.call('ZRANGEBYSCORE', K.active, '-inf', now) -- -1 in a comment", false},
		{"local x = y -1", false},
	} {
		t.Run(tc.line, func(t *testing.T) {
			if got := negativeLiteral.MatchString(luaCode(tc.line)); got != tc.bare {
				t.Errorf("flagged %v, want %v", got, tc.bare)
			}
		})
	}
}
