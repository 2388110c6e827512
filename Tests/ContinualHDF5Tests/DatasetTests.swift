import ContinualHDF5
import Testing

/// Shapes covering rank 0 (scalar) to 3, including zero-length dimensions.
private let shapes: [[Int]] = [[], [0], [1], [5], [2, 3], [0, 4], [3, 0], [2, 3, 4], [2, 0, 3]]

private func roundTrip<T: HDF5Scalar & Equatable>(_ make: (Int) -> T, shape: [Int]) throws {
    let values = (0..<shape.reduce(1, *)).map(make)
    try withTemporaryFile { path in
        let file = try HDF5File.create(path: path)
        try file.root.write(values, shape: shape, name: "data")
        try file.close()
        let reopened = try HDF5File.open(path: path)
        let dataset = try reopened.root.openDataset("data")
        #expect(try dataset.shape == shape)
        #expect(try dataset.read(as: T.self) == values)
    }
}

@Test(arguments: shapes)
func everyScalarTypeRoundTrips(shape: [Int]) throws {
    try roundTrip({ Double($0) * 0.5 - 1 }, shape: shape)
    try roundTrip({ Float($0) * 0.25 }, shape: shape)
    try roundTrip({ Int32($0) - 7 }, shape: shape)
    try roundTrip({ Int64($0) * 1_000_000_007 }, shape: shape)
    try roundTrip({ UInt8($0 % 256) }, shape: shape)
    try roundTrip({ Int8($0 % 100) - 50 }, shape: shape)
    try roundTrip({ $0 * 3 }, shape: shape)
}

@Test func largeDatasetsAreCompressedAndRoundTrip() throws {
    let values = (0..<300_000).map { Float($0 % 97) }
    try withTemporaryFile { path in
        let file = try HDF5File.create(path: path)
        try file.root.write(values, shape: [300, 1000], name: "big")
        try file.root.write(values, shape: [300, 1000], name: "raw", compress: false)
        try file.close()
        let reopened = try HDF5File.open(path: path)
        #expect(try reopened.root.openDataset("big").read(as: Float.self) == values)
        #expect(try reopened.root.openDataset("raw").read(as: Float.self) == values)
    }
}

@Test func readConvertsBetweenNumericTypes() throws {
    try withTemporaryFile { path in
        let file = try HDF5File.create(path: path)
        let dataset = try file.root.write([1.5, 2.0, -3.0] as [Float], shape: [3], name: "f")
        #expect(try dataset.read(as: Double.self) == [1.5, 2.0, -3.0])
        #expect(try dataset.read(as: Int64.self) == [1, 2, -3])
        #expect(try file.root.write(Int32(42), name: "scalar").read(as: Double.self) == [42])
    }
}

@Test func stringDatasetsRoundTripUTF8() throws {
    let strings = ["", "plain", "naïve café", "日本語", "emoji 🧠", String(repeating: "x", count: 10_000)]
    try withTemporaryFile { path in
        let file = try HDF5File.create(path: path)
        try file.root.write(strings, name: "names")
        try file.root.write([String](), name: "empty")
        try file.close()
        let reopened = try HDF5File.open(path: path)
        #expect(try reopened.root.openDataset("names").readStrings() == strings)
        #expect(try reopened.root.openDataset("names").shape == [strings.count])
        #expect(try reopened.root.openDataset("empty").readStrings() == [])
    }
}

@Test func writingIntoNestedPathsCreatesGroups() throws {
    try withTemporaryFile { path in
        let file = try HDF5File.create(path: path)
        let dataset = try file.root.write([1, 2] as [Int64], shape: [2], name: "runs/abc/values")
        #expect(dataset.path == "/runs/abc/values")
        #expect(dataset.name == "values")
        #expect(try file.root.openGroup("runs").childNames() == ["abc"])
        #expect(try file.root.openGroup("runs/abc").openDataset("values").read(as: Int64.self) == [1, 2])
    }
}

@Test func reopeningForWritingKeepsExistingData() throws {
    try withTemporaryFile { path in
        try HDF5File.create(path: path).root.write([1.0], shape: [1], name: "a")
        let file = try HDF5File.open(path: path, mode: .readWrite)
        try file.root.write([2.0], shape: [1], name: "b")
        try file.flush()
        try file.close()
        #expect(try HDF5File.open(path: path).root.childNames() == ["a", "b"])
    }
}

/// A million 1-byte flags, all 0, compress about 1000:1; read into wider integers they must not
/// count as an expansion beyond what deflate reaches (a federation's per-client `adversary` of a
/// million clients). The ratio is the file type's bytes to the stored bytes.
@Test func constantFlagsReadIntoWiderIntegersAreNotAHostileExpansion() throws {
    let flags = [Int8](repeating: 0, count: 2_000_000)
    try withTemporaryFile { path in
        let file = try HDF5File.create(path: path)
        try file.root.write(flags, shape: [flags.count], name: "flags")
        try file.close()
        let reopened = try HDF5File.open(path: path)
        let dataset = try reopened.root.openDataset("flags")
        #expect(try dataset.read(as: Int8.self) == flags)
        #expect(try dataset.read(as: Int64.self) == [Int64](repeating: 0, count: flags.count))
    }
}
