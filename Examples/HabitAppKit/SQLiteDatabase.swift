import CSQLite

/// A minimal connection to a SQLite database file (the system library through `CSQLite`): SQL
/// statements, prepared statements with bound values, and transactions. The example app's own
/// code, never part of the portable core. One connection per app process; not thread-safe.
final class SQLiteDatabase {
    private var handle: OpaquePointer?
    /// The file.
    let path: String

    /// Opens (creating if needed) the database at `path`.
    init(path: String) throws {
        self.path = path
        var db: OpaquePointer?
        let code = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nil)
        handle = db
        guard code == SQLITE_OK else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close_v2(db)
            handle = nil
            throw EventStoreError(path: path, "cannot open: \(message)")
        }
        sqlite3_busy_timeout(db, 5000)
    }

    deinit { close() }

    /// Closes the connection; an open transaction is rolled back (what a killed process leaves
    /// behind as well: SQLite ignores the uncommitted part of the write-ahead log on the next open).
    func close() {
        if let handle { sqlite3_close_v2(handle) }
        handle = nil
    }

    /// Runs `sql` (one or more statements without parameters).
    func execute(_ sql: String) throws {
        var error: UnsafeMutablePointer<CChar>?
        guard sqlite3_exec(handle, sql, nil, nil, &error) == SQLITE_OK else {
            let message = error.map { String(cString: $0) } ?? "error"
            sqlite3_free(error)
            throw EventStoreError(path: path, "\(message) (in: \(sql))")
        }
    }

    /// A prepared statement of `sql` with `values` bound to its `?` parameters in order.
    func statement(_ sql: String, _ values: [SQLiteValue] = []) throws -> SQLiteStatement {
        var raw: OpaquePointer?
        guard sqlite3_prepare_v2(handle, sql, -1, &raw, nil) == SQLITE_OK, let raw else {
            throw EventStoreError(path: path, "\(String(cString: sqlite3_errmsg(handle))) (in: \(sql))")
        }
        let s = SQLiteStatement(raw, database: self, sql: sql)
        for (i, v) in values.enumerated() {
            let index = Int32(i + 1)
            let code: Int32
            switch v {
            case .integer(let x): code = sqlite3_bind_int64(raw, index, x)
            case .real(let x): code = sqlite3_bind_double(raw, index, x)
            case .text(let x): code = sqlite3_bind_text(raw, index, x, -1, csqlite_transient())
            case .blob(let x): code = x.withUnsafeBytes { sqlite3_bind_blob(raw, index, $0.baseAddress, Int32($0.count), csqlite_transient()) }
            case .null: code = sqlite3_bind_null(raw, index)
            }
            guard code == SQLITE_OK else { throw error("bind parameter \(index)", sql) }
        }
        return s
    }

    /// Every row of `sql`, each turned into a value by `row`. Steps the statement to its end (a
    /// statement left mid-way would keep a read open and block COMMIT).
    func rows<T>(_ sql: String, _ values: [SQLiteValue] = [], _ row: (SQLiteStatement) throws -> T) throws -> [T] {
        let s = try statement(sql, values)
        var out: [T] = []
        while try s.step() { out.append(try row(s)) }
        return out
    }

    /// Runs a statement that returns no rows.
    func run(_ sql: String, _ values: [SQLiteValue] = []) throws {
        let s = try statement(sql, values)
        while try s.step() {}
    }

    /// Rows changed by the latest INSERT, UPDATE or DELETE.
    var changes: Int { Int(sqlite3_changes(handle)) }

    func error(_ what: String, _ sql: String) -> EventStoreError {
        EventStoreError(path: path, "\(what): \(String(cString: sqlite3_errmsg(handle))) (in: \(sql))")
    }
}

/// A value bound to a statement's parameter.
enum SQLiteValue {
    case integer(Int64)
    case text(String)
    case real(Double)
    case blob([UInt8])
    case null
}

/// A prepared statement; finalized when released.
final class SQLiteStatement {
    private let raw: OpaquePointer
    private let database: SQLiteDatabase
    private let sql: String

    init(_ raw: OpaquePointer, database: SQLiteDatabase, sql: String) {
        self.raw = raw
        self.database = database
        self.sql = sql
    }

    deinit { sqlite3_finalize(raw) }

    /// Advances to the next row: true when there is one, false when done.
    func step() throws -> Bool {
        switch sqlite3_step(raw) {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default: throw database.error("step", sql)
        }
    }

    /// Column `i` of the current row as an integer.
    func integer(_ i: Int32) -> Int64 { sqlite3_column_int64(raw, i) }
    /// Column `i` as a float64.
    func real(_ i: Int32) -> Double { sqlite3_column_double(raw, i) }
    /// Column `i` as text.
    func text(_ i: Int32) -> String { sqlite3_column_text(raw, i).map { String(cString: $0) } ?? "" }
    /// Column `i` as bytes.
    func blob(_ i: Int32) -> [UInt8] {
        let n = Int(sqlite3_column_bytes(raw, i))
        guard n > 0, let p = sqlite3_column_blob(raw, i) else { return [] }
        return Array(UnsafeRawBufferPointer(start: p, count: n))
    }
    /// Whether column `i` is NULL.
    func isNull(_ i: Int32) -> Bool { sqlite3_column_type(raw, i) == SQLITE_NULL }
}

/// A failed database operation.
public struct EventStoreError: Error, CustomStringConvertible {
    /// The database file.
    public var path: String
    /// What failed.
    public var message: String

    init(path: String, _ message: String) {
        self.path = path
        self.message = message
    }

    /// "path: message".
    public var description: String { "\(path): \(message)" }
}
