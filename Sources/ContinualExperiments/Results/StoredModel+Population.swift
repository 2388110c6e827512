import ContinualCore
import ContinualHDF5
import ContinualScenarios
import Foundation

/// One person's model of a population run (`continual export --user NAME`): each user trains on
/// their own data, so the run stores every user's final model (`population/final_parameters`,
/// users × parameters, `"keep_models"`), and the user's stream and seed are rebuilt exactly as
/// the population executor made them.
extension StoredModel {
    /// The final model of user `user` (their name in the data file's user column, or their user
    /// id) of population run `run` (id or unique name) of results file `results`.
    public static func load(results: String, run: String, user: String) throws -> StoredModel {
        let source: WarmStart.Source
        do { source = try WarmStart.readFile(results: results, run: run) } catch let f as WarmStart.Failure {
            throw Failure(description: f.message)
        }
        let (index, name, parameters) = try userModel(results: results, runId: source.runId, run: run, user: user)
        let base = FilePaths.directory(of: source.experimentPath.isEmpty ? results : source.experimentPath)
        var stored = try rebuild(configJSON: source.configJSON, base: base, parameters: parameters,
                                 what: "user \"\(name)\" of run \"\(run)\" of \(results)", run: run, member: index)
        guard stored.predictionExport == .network else {
            // The plugin reports a route or gate export reads are user 0's, not this user's.
            throw Failure(description: "run \"\(run)\" predicts through a classifier its results file keeps for one user only "
                + "(\(stored.config.strategyLabel)); a population member's model of this method cannot be exported")
        }
        stored.resultsPath = results
        stored.runId = source.runId
        stored.user = name
        return stored
    }

    /// The stream and seed a run's model was trained with: the run's own, or population member
    /// `member`'s (`PopulationExecutor.member`, from the population seed and the index alone).
    static func memberStream(_ config: RunConfig, member: Int?) throws -> (ExperienceStream, UInt64) {
        guard let member, let population = config.population else {
            return (try config.scenario.options.makeStream(seed: config.seed), config.seed)
        }
        guard let generator = config.scenario.options as? any PopulationScenario else {
            throw Failure(description: "scenario \"\(config.scenario.typeName)\" has no population members")
        }
        let popSeed = population.seed ?? config.seed
        let scenario = try generator.forPopulation(users: population.users, seed: popSeed)
        let (modelSeed, options) = PopulationExecutor.member(member, of: scenario, spread: population.spread, seed: popSeed)
        return (try options.makeStream(seed: modelSeed), modelSeed)
    }

    /// Row `user` of `population/final_parameters` of run group `runId`: the index, the name it
    /// goes by and the parameters. The error lists the names when `user` is none of them.
    static func userModel(results: String, runId: String, run: String,
                          user: String) throws -> (index: Int, name: String, parameters: [Float]) {
        let what = "run \"\(run)\" of \(results)"
        do {
            return try HDF5Lock.withLock {
                let file = try HDF5File.open(path: results, mode: .readOnly)
                defer { try? file.close() }
                let g = try file.root.openGroup("runs").openGroup(runId)
                guard g.exists("population") else {
                    throw Failure(description: "\(what) is not a population run; export it without --user")
                }
                let p = try g.openGroup("population")
                guard p.exists("final_parameters") else {
                    throw Failure(description: "\(what) keeps no user's model (population/final_parameters): it was written "
                        + "with \"keep_models\": false, by a federation, or by an earlier toolkit build; rerun it to export a user")
                }
                let ids = try p.openDataset("user").read(as: Int64.self).map(String.init)
                let names = p.exists("user_name") ? try p.openDataset("user_name").readStrings() : ids
                guard let index = names.firstIndex(of: user) ?? ids.firstIndex(of: user) else {
                    let shown = names.prefix(12).joined(separator: ", ") + (names.count > 12 ? ", …" : "")
                    throw Failure(description: "\(what) has no user \"\(user)\" (its \(names.count) users: \(shown))")
                }
                let d = try p.openDataset("final_parameters")
                let shape = try d.shape
                guard shape.count == 2, shape[0] == names.count, shape[1] >= 1 else {
                    throw Failure(description: "\(what): population/final_parameters has shape \(shape), not users × parameters")
                }
                let all: [Float] = try d.read()
                let row = Array(all[(index * shape[1])..<((index + 1) * shape[1])])
                guard row.allSatisfy(\.isFinite) else {
                    let status = p.exists("status") ? (try? p.openDataset("status").readStrings())?[index] ?? "?" : "?"
                    throw Failure(description: "user \"\(names[index])\" of \(what) has no final model (status \(status))")
                }
                return (index, names[index], row)
            }
        } catch let f as Failure {
            throw f
        } catch {
            throw Failure(description: "cannot read the users' models of \(what): \(error)")
        }
    }
}
