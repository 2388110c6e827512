import ContinualHDF5
import Testing

@Test func nestedGroupsExistListAndDelete() throws {
    try withTemporaryFile { path in
        let file = try HDF5File.create(path: path)
        let root = file.root
        let run = try root.createGroup("runs/b/deep")
        #expect(run.path == "/runs/b/deep")
        #expect(run.name == "deep")
        try root.createGroup("runs/a")
        try root.openGroup("runs").createGroup("c")
        try root.write([1.0], shape: [1], name: "runs/z")
        #expect(try root.childNames() == ["runs"])
        #expect(try root.openGroup("runs").childNames() == ["a", "b", "c", "z"])
        #expect(root.exists("runs/b/deep"))
        #expect(root.exists("/runs/b"))
        #expect(!root.exists("runs/x/deep"))
        #expect(!root.exists("runs/z/inside-a-dataset"))
        #expect(try root.openGroup("runs/b").exists("deep"))
        #expect(try root.requireGroup("runs/a").path == "/runs/a")
        #expect(try root.requireGroup("runs/new").path == "/runs/new")
        try root.openGroup("runs").delete("b")
        #expect(!root.exists("runs/b"))
        #expect(try root.openGroup("runs").childNames() == ["a", "c", "new", "z"])
        #expect(try root.createGroup("empty").childNames() == [])
    }
}

@Test func creatingAnExistingNameFails() throws {
    try withTemporaryFile { path in
        let root = try HDF5File.create(path: path).root
        try root.createGroup("g")
        try root.write([1.0], shape: [1], name: "g/x")
        let group = #expect(throws: HDF5Error.self) { try root.createGroup("g") }
        #expect(group?.kind == .alreadyExists)
        let dataset = #expect(throws: HDF5Error.self) { try root.write([1.0], shape: [1], name: "g/x") }
        #expect(dataset?.message == "cannot create dataset 'g/x' in \(path): it already exists")
    }
}
