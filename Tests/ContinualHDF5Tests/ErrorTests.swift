import ContinualHDF5
import Foundation
import Testing

@Test func openingAMissingFileNamesThePath() throws {
    try withTemporaryDirectory { directory in
        let path = directory.appendingPathComponent("results/x.h5").path
        let error = #expect(throws: HDF5Error.self) { try HDF5File.open(path: path) }
        #expect(error?.kind == .fileNotFound)
        #expect(error?.description == "cannot open \(path): file not found")
        let create = #expect(throws: HDF5Error.self) { try HDF5File.create(path: path) }
        #expect(create?.description == "cannot create \(path): directory '\(directory.path)/results' does not exist")
    }
}

@Test func openingANonHDF5FileFails() throws {
    try withTemporaryDirectory { directory in
        let path = directory.appendingPathComponent("notes.txt").path
        try "hello".write(toFile: path, atomically: true, encoding: .utf8)
        let error = #expect(throws: HDF5Error.self) { try HDF5File.open(path: path) }
        #expect(error?.description == "cannot open \(path): not an HDF5 file")
    }
}

@Test func missingObjectsNameTheirFullPath() throws {
    try withTemporaryFile { path in
        let file = try HDF5File.create(path: path)
        let runs = try file.root.createGroup("runs/abc")
        let dataset = #expect(throws: HDF5Error.self) { try runs.openDataset("accuracy_matrix") }
        #expect(dataset?.kind == .notFound)
        #expect(dataset?.description == "no dataset 'runs/abc/accuracy_matrix' in \(path)")
        let group = #expect(throws: HDF5Error.self) { try file.root.openGroup("runs/zzz/q") }
        #expect(group?.description == "no group 'runs/zzz/q' in \(path)")
        let kind = #expect(throws: HDF5Error.self) { try file.root.openDataset("runs") }
        #expect(kind?.description == "'runs' in \(path) is a group, not a dataset")
        let delete = #expect(throws: HDF5Error.self) { try runs.delete("nope") }
        #expect(delete?.description == "cannot delete 'runs/abc/nope' in \(path): it does not exist")
    }
}

@Test func shapeMismatchAndWrongKindsAreReported() throws {
    try withTemporaryFile { path in
        let root = try HDF5File.create(path: path).root
        let shape = #expect(throws: HDF5Error.self) { try root.write([1.0, 2.0], shape: [3], name: "x") }
        #expect(shape?.description == "cannot create dataset 'x' in \(path): shape [3] holds 3 values but 2 were given")
        let strings = try root.write(["a"], name: "s")
        let numeric = #expect(throws: HDF5Error.self) { try strings.read(as: Int32.self) }
        #expect(numeric?.description == "cannot read dataset 's' in \(path): it holds strings, not Int32")
        let text = #expect(throws: HDF5Error.self) { try root.write([1.0], shape: [1], name: "d").readStrings() }
        #expect(text?.kind == .typeMismatch)
    }
}

@Test func usingAClosedFileSaysSo() throws {
    try withTemporaryFile { path in
        let file = try HDF5File.create(path: path)
        let group = try file.root.createGroup("g")
        try file.close()
        try file.close()  // idempotent
        #expect(!file.isOpen)
        let error = #expect(throws: HDF5Error.self) { try group.write([1.0], shape: [1], name: "x") }
        #expect(error?.kind == .fileClosed)
        #expect(error?.description == "cannot create dataset 'g/x' in \(path): the file is closed")
    }
}
