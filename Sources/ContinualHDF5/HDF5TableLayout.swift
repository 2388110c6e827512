import CHDF5
import Foundation

/// The packed in-memory record layout of an `HDF5Table`, computed from its columns.
/// Offsets are explicit and unaligned, so nothing depends on how Swift would lay out a struct.
struct HDF5TableLayout {
    /// How one field is stored in a record.
    enum Storage {
        case float64, int64
        case variableString(H5T_cset_t)
        case fixedString(size: Int, cset: H5T_cset_t, pad: H5T_str_t)

        var size: Int {
            switch self {
            case .float64, .int64: 8
            case .variableString: MemoryLayout<UnsafeMutablePointer<CChar>?>.size
            case .fixedString(let size, _, _): size
            }
        }

        var kind: HDF5Table.ColumnKind {
            switch self {
            case .float64: .float64
            case .int64: .int64
            case .variableString, .fixedString: .string
            }
        }
    }

    struct Field {
        let name: String
        let storage: Storage
        let offset: Int
    }

    let fields: [Field]
    let rowSize: Int

    init(_ fields: [(name: String, storage: Storage)]) {
        var offset = 0
        self.fields = fields.map { field in
            defer { offset += field.storage.size }
            return Field(name: field.name, storage: field.storage, offset: offset)
        }
        rowSize = offset
    }

    /// The layout we write: native doubles and int64s, variable-length UTF-8 strings.
    init(columns: [HDF5Table.Column]) {
        self.init(columns.map { column in
            switch column.kind {
            case .float64: (column.name, .float64)
            case .int64: (column.name, .int64)
            case .string: (column.name, .variableString(H5T_CSET_UTF8))
            }
        })
    }

    /// A memory layout for reading a compound file type: any integer member becomes int64, any float
    /// member float64 (HDF5 converts, matching members by name); string members keep their storage.
    init(fileType: hid_t, failure: (String?) -> HDF5Error) throws {
        let count = H5Tget_nmembers(fileType)
        guard count >= 0 else { throw failure(nil) }
        var fields: [(name: String, storage: Storage)] = []
        for index in 0..<UInt32(count) {
            guard let cName = H5Tget_member_name(fileType, index) else { throw failure(nil) }
            let name = String(cString: cName)
            H5free_memory(cName)
            let member = try check(H5Tget_member_type(fileType, index), failure(nil))
            defer { H5Tclose(member) }
            switch H5Tget_class(member) {
            case H5T_INTEGER: fields.append((name, .int64))
            case H5T_FLOAT: fields.append((name, .float64))
            case H5T_STRING where H5Tis_variable_str(member) > 0:
                fields.append((name, .variableString(H5Tget_cset(member))))
            case H5T_STRING:
                fields.append((name, .fixedString(size: H5Tget_size(member), cset: H5Tget_cset(member),
                                                  pad: H5Tget_strpad(member))))
            case let other:
                throw failure("column '\(name)' holds \(describe(typeClass: other)), not float64, int64 or string")
            }
        }
        self.init(fields)
    }

    var columns: [HDF5Table.Column] { fields.map { HDF5Table.Column($0.name, $0.storage.kind) } }

    /// A new compound type for this layout (memory and file type alike); caller closes it. Negative on failure.
    func makeType() -> hid_t {
        let compound = H5Tcreate(H5T_COMPOUND, rowSize)
        guard compound >= 0 else { return compound }
        for field in fields {
            let member: hid_t
            switch field.storage {
            case .float64: member = H5Tcopy(chdf5_H5T_NATIVE_DOUBLE())
            case .int64: member = H5Tcopy(chdf5_H5T_NATIVE_INT64())
            case .variableString(let cset): member = HDF5Strings.variableType(cset: cset)
            case .fixedString(let size, let cset, let pad):
                member = H5Tcopy(chdf5_H5T_C_S1())
                if member >= 0, H5Tset_size(member, size) < 0 || H5Tset_cset(member, cset) < 0
                    || H5Tset_strpad(member, pad) < 0
                {
                    H5Tclose(member)
                    H5Tclose(compound)
                    return -1
                }
            }
            let inserted = member >= 0 ? H5Tinsert(compound, field.name, field.offset, member) : -1
            if member >= 0 { H5Tclose(member) }
            guard inserted >= 0 else {
                H5Tclose(compound)
                return -1
            }
        }
        return compound
    }

    /// Calls `body` with `rows` packed into a zeroed buffer of `rows.count * rowSize` bytes, freeing the
    /// buffer and the `strdup`ed variable-length strings afterwards. Bad cells are reported via `failure`.
    func withPacked<R>(
        _ rows: [[HDF5Value]], failure: (String) -> HDF5Error, _ body: (UnsafeMutableRawPointer) throws -> R
    ) throws -> R {
        let byteCount = max(1, rows.count * rowSize)
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: byteCount, alignment: 16)
        buffer.initializeMemory(as: UInt8.self, repeating: 0, count: byteCount)
        var cStrings: [UnsafeMutablePointer<CChar>?] = []
        defer {
            cStrings.forEach { free($0) }
            buffer.deallocate()
        }
        for (rowIndex, row) in rows.enumerated() {
            guard row.count == fields.count else {
                throw failure("row \(rowIndex) has \(row.count) values but the table has \(fields.count) columns")
            }
            let record = buffer + rowIndex * rowSize
            for (field, value) in zip(fields, row) {
                switch (field.storage, value) {
                case (.float64, .double(let number)):
                    record.storeBytes(of: number, toByteOffset: field.offset, as: Double.self)
                case (.float64, .int(let number)):
                    record.storeBytes(of: Double(number), toByteOffset: field.offset, as: Double.self)
                case (.int64, .int(let number)):
                    record.storeBytes(of: number, toByteOffset: field.offset, as: Int64.self)
                case (.variableString, .string(let text)):
                    let copy = strdup(text)
                    cStrings.append(copy)
                    record.storeBytes(of: copy, toByteOffset: field.offset, as: UnsafeMutablePointer<CChar>?.self)
                case (.fixedString(let size, _, _), .string(let text)):
                    let bytes = Array(text.utf8)
                    guard bytes.count <= size else {
                        throw failure("row \(rowIndex), column '\(field.name)': \(bytes.count)-byte string exceeds the fixed size \(size)")
                    }
                    (record + field.offset).copyMemory(from: bytes, byteCount: bytes.count)
                default:
                    throw failure("row \(rowIndex), column '\(field.name)': expected \(field.storage.kind), got \(value)")
                }
            }
        }
        return try body(buffer)
    }

    /// Unpacks `count` records from `buffer` (variable-length strings must still be unreclaimed).
    func unpack(_ buffer: UnsafeRawPointer, count: Int) -> [[HDF5Value]] {
        (0..<count).map { rowIndex in
            let record = buffer + rowIndex * rowSize
            return fields.map { field -> HDF5Value in
                switch field.storage {
                case .float64: .double(record.loadUnaligned(fromByteOffset: field.offset, as: Double.self))
                case .int64: .int(record.loadUnaligned(fromByteOffset: field.offset, as: Int64.self))
                case .variableString:
                    .string(record.loadUnaligned(fromByteOffset: field.offset, as: UnsafeMutablePointer<CChar>?.self)
                        .map { String(cString: $0) } ?? "")
                case .fixedString(let size, _, let pad):
                    .string(HDF5Strings.decodeFixed(UnsafeRawBufferPointer(start: record + field.offset, count: size),
                                                    spacePadded: pad == H5T_STR_SPACEPAD))
                }
            }
        }
    }
}
