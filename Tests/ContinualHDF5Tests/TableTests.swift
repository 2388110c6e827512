import ContinualHDF5
import Testing

private let columns: [(name: String, kind: HDF5Table.ColumnKind)] = [
    ("strategy", .string), ("seed", .int64), ("accuracy", .float64), ("forgetting", .float64),
]

@Test func tablesWriteAppendAndReadBack() throws {
    let first: [[HDF5Value]] = [["ewc", 0, 0.91, 0.05], ["naïve 🧪", 1, 0.5, .double(-0.0)]]
    let more: [[HDF5Value]] = (0..<1000).map { [.string("replay-\($0)"), .int(Int64($0)), .double(Double($0) / 7), 3] }
    try withTemporaryFile { path in
        let file = try HDF5File.create(path: path)
        let table = try file.root.write(HDF5Table(columns: columns, rows: first), name: "summary", chunkRows: 16)
        try table.append(rows: more)
        try table.append(rows: [])
        try file.close()
        let read = try HDF5File.open(path: path).root.openDataset("summary").readTable()
        #expect(read.columns == columns.map { HDF5Table.Column($0.name, $0.kind) })
        #expect(read.rows.count == 1002)
        // An `.int` written into a float64 column reads back as `.double`.
        let expected = first + more.map { [$0[0], $0[1], $0[2], .double(3)] }
        #expect(read.rows == expected)
        #expect(read.column("seed")?.last == .int(999))
    }
}

@Test func emptyTablesCanGrow() throws {
    try withTemporaryFile { path in
        let file = try HDF5File.create(path: path)
        let table = try file.root.write(HDF5Table(columns: columns), name: "t")
        #expect(try table.shape == [0])
        #expect(try table.readTable().rows.isEmpty)
        try table.append(rows: [["a", 1, 2.0, 3.0]])
        #expect(try table.readTable().rows == [["a", 1, 2.0, 3.0]])
    }
}

@Test func badRowsAreRejectedWithoutChangingTheTable() throws {
    try withTemporaryFile { path in
        let file = try HDF5File.create(path: path)
        let table = try file.root.write(HDF5Table(columns: columns, rows: [["a", 1, 2.0, 3.0]]), name: "t")
        let short = #expect(throws: HDF5Error.self) { try table.append(rows: [["a", 1]]) }
        #expect(short?.message == "cannot append to dataset 't' in \(path): row 0 has 2 values but the table has 4 columns")
        let wrong = #expect(throws: HDF5Error.self) { try table.append(rows: [["a", 1.5, 2.0, 3.0]]) }
        #expect(wrong?.message.contains("row 0, column 'seed': expected int64, got 1.5") == true)
        #expect(try table.shape == [1])
        let duplicate = #expect(throws: HDF5Error.self) {
            try file.root.write(HDF5Table(columns: [("x", .int64), ("x", .float64)]), name: "dup")
        }
        #expect(duplicate?.message.contains("duplicate column name 'x'") == true)
        #expect(!file.root.exists("dup"))
    }
}

@Test func numericReadsOfATableFail() throws {
    try withTemporaryFile { path in
        let table = try HDF5File.create(path: path).root.write(HDF5Table(columns: columns), name: "t")
        let error = #expect(throws: HDF5Error.self) { try table.read(as: Double.self) }
        #expect(error?.message == "cannot read dataset 't' in \(path): it holds compound (table) records, not Double")
    }
}
