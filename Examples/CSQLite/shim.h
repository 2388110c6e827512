// The system SQLite (Debian: libsqlite3-dev; macOS/iOS: the SDK's libsqlite3), used only by the
// example app's targets (Examples/HabitAppKit), never by the portable core.
#include <sqlite3.h>

// SQLITE_TRANSIENT is a macro over a cast that Swift cannot import: binding text or a blob with
// it makes SQLite copy the bytes before the call returns.
static inline sqlite3_destructor_type csqlite_transient(void) { return SQLITE_TRANSIENT; }
