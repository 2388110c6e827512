@testable import ContinualHDF5
import Testing

@Test func operationsLeaveNoObjectOpen() throws {
    try withTemporaryFile { path in
        let file = try HDF5File.create(path: path)
        do {
            let run = try file.root.createGroup("runs/a")
            try run.attributes.set("config", "{}")
            try run.attributes.set("lr", 0.1)
            _ = try run.attributes.string("config")
            _ = try? run.attributes.string("lr")
            _ = try run.attributes.names()
            let data = try run.write((0..<5000).map(Double.init), shape: [50, 100], name: "x")
            _ = try data.read(as: Float.self)
            _ = try? data.readStrings()
            _ = try run.write(["a", "b"], name: "s").readStrings()
            let table = try run.write(HDF5Table(columns: [("k", .string), ("v", .float64)], rows: [["a", 1.0]]), name: "t")
            try table.append(rows: [["b", 2.0]])
            _ = try? table.append(rows: [[1.0, "wrong"]])
            _ = try table.readTable()
            let scale = try run.write([0.0, 1.0], shape: [2], name: "axis")
            let matrix = try run.write([1.0, 2.0], shape: [2, 1], name: "m")
            try matrix.attachDimensionScale(scale, toDimension: 0)
            try matrix.setDimensionLabels(["a", "b"])
            _ = try matrix.dimensionLabels()
            _ = try? file.root.openDataset("runs")
            _ = try? file.root.openGroup("missing")
            _ = try file.root.childNames()
            #expect(file.openObjectCount > 0)
        }
        #expect(file.openObjectCount == 0)
        try file.close()
    }
}
