package queue

// Limits of the id formats fixed by the external contract.
const (
	MaxEventIDLen = 64
	MaxUserIDLen  = 128
)

// ValidEventID reports whether id is 1–64 characters of [A-Za-z0-9_-].
func ValidEventID(id string) bool {
	if len(id) == 0 || len(id) > MaxEventIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !isAlnum(c) && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

// ValidUserID reports whether id is 1–128 characters of [A-Za-z0-9._:@-].
func ValidUserID(id string) bool {
	if len(id) == 0 || len(id) > MaxUserIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !isAlnum(c) && c != '.' && c != '_' && c != ':' && c != '@' && c != '-' {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// CheckEventID returns nil for a valid event id, else the contract's
// invalid_event_id error.
func CheckEventID(id string) error {
	if !ValidEventID(id) {
		return Errorf(CodeInvalidEventID, "event id must be 1-%d characters of [A-Za-z0-9_-]", MaxEventIDLen)
	}
	return nil
}

// CheckUserID returns nil for a valid user id, else the contract's
// invalid_user_id error.
func CheckUserID(id string) error {
	if !ValidUserID(id) {
		return Errorf(CodeInvalidUserID, "user id must be 1-%d characters of [A-Za-z0-9._:@-]", MaxUserIDLen)
	}
	return nil
}

// MaxJoinKeyLen bounds a join's join key (its Idempotency-Key).
const MaxJoinKeyLen = 64

// ValidJoinKey reports whether v can be a join's join key: 1-64 characters of
// [A-Za-z0-9_-].
func ValidJoinKey(v string) bool {
	if len(v) == 0 || len(v) > MaxJoinKeyLen {
		return false
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; !isAlnum(c) && c != '_' && c != '-' {
			return false
		}
	}
	return true
}
