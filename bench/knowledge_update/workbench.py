"""Generate the `workbench` knowledge-update dev set: what a coding agent remembers about the
developer it works for.

Built to check `assistant` from outside: the same regime (one user per scope, no names, "I …",
"User …", "We …", "Our …"), but other facts (shell, package manager, deploy target, laptop,
language, time zone, current project), other verbs and sentence shapes (clipped notes like
"Switched my shell to fish", colon lists, plural "we" for the user's team), and memories about
other people written the ways a developer's notes name them: a role ("my teammate", "our
designer", "the user's cofounder"), a first name ("Priya swears by pnpm"), or a client.
Stable facts and fillers of the same register.

Output: bench/knowledge_update/workbench.jsonl, the schema of assistant.jsonl.

Deterministic: `python bench/knowledge_update/workbench.py [--seed 9090] [--households 40]`.
"""

from __future__ import annotations

from assistant import HERE, Fact, Tables, main

FACTS = (
    Fact("shell",
         ("Which shell am I using these days?", "What shell does the user run now?",
          "What's my login shell at the moment?", "Which shell is the user on currently?"),
         ("Default shell: {v}.", "I run everything in {v}.", "User's terminal runs {v}.",
          "The user prefers {v} as a shell.", "My dotfiles are set up for {v}.", "Shell of choice is {v}."),
         ("Switched my shell to {v}.", "User ditched {o}; {v} is the login shell now.",
          "I finally moved my dotfiles from {o} to {v}.", "The user is trying {v} instead of {o}.",
          "Changed the default shell to {v} today.", "Replaced {o} with {v} on every machine."),
         ("zsh", "bash", "fish", "nushell", "PowerShell", "xonsh", "elvish", "tcsh"),
         ("My teammate swears by {v}.", "Priya keeps telling me to try {v}.", "The user's cofounder lives in {v}.")),
    Fact("package manager",
         ("Which package manager do we use now?", "What does the user install packages with these days?",
          "Which JS package manager am I on at present?", "What package manager does the user prefer currently?"),
         ("We install dependencies with {v}.", "User manages packages with {v}.", "Lockfile is from {v}.",
          "Our monorepo runs on {v}.", "I use {v} for every repo.", "The user's projects use {v}."),
         ("Migrated the repo from {o} to {v}.", "We dropped {o}; {v} is faster.",
          "User moved all workspaces to {v}.", "From now on I use {v}, not {o}.",
          "The team standardised on {v} this sprint.", "Deleted the {o} lockfile and regenerated with {v}."),
         ("npm", "pnpm", "yarn", "bun", "deno"),
         ("Our designer only knows {v}.", "The client's repo still uses {v}.", "My teammate prefers {v}.")),
    Fact("deploy target",
         ("Where do we deploy at the moment?", "Where does the user host the app now?",
          "What platform am I deploying to these days?", "Which host runs the user's service currently?"),
         ("We deploy to {v}.", "The app is hosted on {v}.", "User ships the service to {v}.",
          "Production runs on {v}.", "I push releases to {v}.", "Our staging and prod live on {v}."),
         ("Moved production from {o} to {v}.", "We left {o}; everything is on {v} now.",
          "User migrated the app to {v} last week.", "Cut over to {v} after the {o} outage.",
          "The service now runs on {v}.", "Finished the move to {v}."),
         ("Fly.io", "Render", "Heroku", "Cloud Run", "AWS Lambda", "Railway", "a Hetzner box", "Vercel",
          "DigitalOcean"),
         ("The client hosts on {v}.", "My old team deploys to {v}.",
          "User's cofounder pitched {v} for the next product.")),
    Fact("laptop",
         ("What laptop am I on these days?", "Which machine does the user work on now?",
          "What computer is the user using at the moment?", "Which laptop do I have currently?"),
         ("Daily driver: {v}.", "I code on a {v}.", "User's work laptop is a {v}.", "My machine is a {v}.",
          "The user develops on a {v}.", "Everything runs locally on my {v}."),
         ("Got a new {v}; the {o} is retired.", "User replaced the {o} with a {v}.",
          "I'm on a {v} since Monday.", "Work shipped me a {v}.", "Moved my setup from the {o} to a {v}.",
          "The user switched to a {v}."),
         ("MacBook Air M2", "MacBook Pro M3", "ThinkPad X1 Carbon", "Framework 13", "Dell XPS 15", "System76 Lemur",
          "ThinkPad T14", "Surface Laptop 5"),
         ("Our intern got a {v}.", "Priya is selling her {v}.", "My partner just bought a {v}.")),
    Fact("language",
         ("What language am I mostly writing nowadays?", "Which language does the user code in now?",
          "What's the user's main language these days?", "Which language do we write the backend in currently?"),
         ("Most of my code is {v}.", "User writes mostly {v}.", "The backend is {v}.", "I'm a {v} developer.",
          "The user's services are written in {v}.", "Our codebase is {v}."),
         ("We're rewriting everything in {v}.", "User ported the backend from {o} to {v}.",
          "I switched from {o} to {v} for new services.", "The team moved to {v}.",
          "New code is {v} only, no more {o}.", "Finished migrating the last {o} service to {v}."),
         ("Go", "Rust", "TypeScript", "Kotlin", "Elixir", "Python", "Java", "C#", "Ruby"),
         ("The contractor writes {v}.", "My teammate is learning {v}.", "The user's cofounder interviews in {v}.")),
    Fact("time zone",
         ("Which time zone am I in these days?", "What time zone does the user work in now?",
          "What's the user's time zone at the moment?", "Which time zone is the user on currently?"),
         ("I work on {v} time.", "User is in {v}.", "The user keeps {v} hours.", "My calendar is set to {v}.",
          "Schedule meetings in {v} for the user.", "User's working hours are {v}."),
         ("Moved to {v}; schedule accordingly.", "User is on {v} now, not {o}.",
          "I changed my calendar from {o} to {v}.", "The user relocated and keeps {v} hours.",
          "Switched my working hours to {v}.", "User's time zone changed to {v}."),
         ("Pacific time", "Eastern time", "Central European time", "UK time", "India Standard Time", "Japan time",
          "Australian Eastern time", "Brazil time"),
         ("The client is on {v}.", "My manager works {v} hours.", "Our designer moved to {v}.")),
    Fact("project",
         ("What am I working on these days?", "Which project is the user focused on now?",
          "What's the user's main project at the moment?", "Which project do I spend my time on currently?"),
         ("I'm heads down on {v}.", "User's main project is {v}.", "Most of the user's time goes to {v}.",
          "Working on {v} full time.", "The user leads {v}.", "My focus is {v}."),
         ("Handed {o} over; now on {v}.", "User moved from {o} to {v}.", "I got pulled onto {v}.",
          "The user was reassigned to {v}.", "Wrapped up {o}; starting {v}.", "New assignment: {v}."),
         ("Atlas", "Bluebird", "Cobalt", "Driftwood", "Ember", "Foxglove", "Granite", "Halyard", "Ironbark"),
         ("My teammate took over {v}.", "Priya is on {v} now.", "The user's manager is pushing {v}.")),
)

STABLE = (
    ("What's my GitHub handle?", "My GitHub handle is {v}.", ("@qbit", "@lunarcat", "@mhz", "@tidepool", "@oakrun")),
    ("What is the user's native language?", "User's native language is {v}.",
     ("Polish", "Portuguese", "Tamil", "Dutch", "Korean", "Greek")),
    ("Is the user colour-blind?", "The user is colour-blind ({v}).", ("deuteranopia", "protanopia", "tritanopia")),
)

FILLERS = ("Build was flaky this morning.", "User asked to keep commit messages short.",
           "Remember to rotate the staging keys.", "Standup moved to 9:30.", "I prefer squash merges.",
           "User wants tests before refactors.", "The CI cache was cleared.", "Lunch and learn on Friday.")

WORKBENCH = Tables(FACTS, STABLE, FILLERS)

if __name__ == "__main__":
    main(__doc__, WORKBENCH, seed=9090, out=HERE / "workbench.jsonl")
