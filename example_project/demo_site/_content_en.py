"""English source material: topic vocabularies, sentence templates and per-subject facts.

Every sentence here was written for this demo site. Templates use the grammar in ``_grammar``:
``[a|b]`` picks an alternative and ``{slot}`` is filled per article (places, people, numbers).
Subject facts are used by one article only; topic sentences by the four articles of a topic;
generic sentences by all articles, which is why they carry the most alternatives.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Subject:
    """One article's own subject: its name, noun phrases and sentences nobody else uses."""

    slug: str
    name: str
    things: tuple[str, ...]
    facts: tuple[str, ...]


@dataclass(frozen=True)
class Topic:
    """A news section with its organisations, roles, ledes, sentences, quotes and subjects."""

    key: str
    section: str
    orgs: tuple[str, ...]
    regulators: tuple[str, ...]
    roles: tuple[str, ...]
    critics: tuple[str, ...]
    headlines: tuple[str, ...]
    ledes: tuple[str, ...]
    body: tuple[str, ...]
    quotes: tuple[str, ...]
    subjects: tuple[Subject, ...]


FIRST_NAMES = tuple(
    "Amara Bruno Celia Dmitri Esther Farid Greta Hamish Ines Jonah Keiko Lorenzo "
    "Maeve Nikhil Odette Pavel Quinn Rosalind Soren Tamsin Umar Vera Wendell Ximena "
    "Yusuf Zofia Anselm Beatrix Cormac Delphine Emeka Fenella Gideon Hana Ivo Juno "
    "Kwame Lucinda Matthias Nadia".split()
)

SURNAMES = tuple(
    "Abernethy Bellweather Castellano Drummond Eriksen Fairbairn Golightly Haverford "
    "Iwu Jablonski Kettering Lindqvist Mbeki Nakashima Oyelaran Pettigrew Quarrie "
    "Ravensworth Sadowski Thistlewood Underhill Valcourt Whitlock Xu Yardley Zamora "
    "Achterberg Blackwood Crowther Dunleavy Esposito Fitzwilliam Grimaldi Holloway "
    "Ibarra Jovanovic Kowalczyk Larkspur Montague Nightingale".split()
)

TOWN_HEADS = tuple(
    "Ash Bram Cald Dun Elm Fern Glen Hart Ivy Kings Lang Marl Nor Oak Pen Red Stone "
    "Thorn Wes Wil".split()
)
TOWN_TAILS = tuple("ford field ham ton wick bury dale mere port stead cott brook".split())

# Used to make the small edits of syndicated copies: one word swapped for a near synonym.
SYNONYMS = {
    "said": "stated",
    "about": "around",
    "roughly": "approximately",
    "residents": "locals",
    "council": "authority",
    "plan": "proposal",
    "scheme": "programme",
    "project": "venture",
    "expected": "anticipated",
    "began": "started",
    "begin": "start",
    "work": "construction",
    "new": "fresh",
    "large": "big",
    "small": "modest",
    "nearly": "almost",
    "several": "a number of",
    "people": "individuals",
    "help": "assist",
    "money": "funding",
    "town": "community",
    "meeting": "gathering",
    "will": "is set to",
    "could": "might",
    "warned": "cautioned",
    "added": "went on",
    "officials": "authorities",
    "local": "area",
    "year": "twelve months",
    "children": "pupils",
    "week": "seven days",
    "because": "as",
    "also": "additionally",
    "however": "nevertheless",
    "quickly": "swiftly",
    "report": "study",
    "first": "initial",
    "cost": "price",
    "build": "construct",
    "start": "launch",
    "show": "reveal",
    "site": "location",
}

GENERIC = (
    "[The decision|The announcement|The move] [follows|comes after] [months|more than a year|"
    "two years] of [debate|consultation|negotiation] between {Org} and {Org2}.",
    "[Officials|Planners|Organisers] [expect|would like] the [first phase|initial stage|opening "
    "round] to be [finished|complete|under way] by [the spring of|the autumn of|the end of] "
    "{year2}.",
    "A [public meeting|town hall session|consultation evening] [is scheduled|has been set|will be "
    "held] at the {Place} [library|community hall|civic centre] on {weekday}.",
    "{Org2} [said|confirmed] it would [publish|release] a [full report|detailed assessment|"
    "written summary] [within|in] {n} weeks.",
    "[Residents|Local people|Neighbours] [can|will be able to] [submit comments|send questions|"
    "register their views] [online|by post|at the council office] until {date}.",
    "The [budget|total cost|price tag] [is estimated at|has been put at|stands at] {money}, "
    "[according to|based on] [figures|documents|a summary] [seen by|shared with] the Chronicle.",
    "[Roughly|About|Nearly] {pct} of [that sum|the money|the funding] [will come|is expected to "
    "come] from {Org2}.",
    "[Not everyone is convinced|Some councillors remain unconvinced|Critics are not persuaded|"
    "The plan has its sceptics].",
    "{P3}, {P3role}, [said|argued|warned] that the [timeline|schedule|plan] [looked|seemed] "
    "[optimistic|ambitious|rushed].",
    "[Similar|Comparable] [schemes|efforts|projects] in {Place2} [took|needed] [almost|more than] "
    "{n} years [to complete|to deliver results|to settle down].",
    "[The Chronicle|This newspaper] [asked|contacted] {Org} for [further comment|details|a "
    "breakdown of costs] but had not [received a reply|heard back] by [the time of publication|"
    "press time|Friday evening].",
    "[According to|Under] the [current|draft|revised] [plan|proposal|timetable], [work|the rollout|"
    "the first stage] [would begin|is due to start] in {month}.",
    "[Local|Regional] [businesses|shop owners|employers] have [largely|mostly|broadly] [welcomed|"
    "supported|backed] the [idea|plan|decision].",
    "[Several|A number of|Dozens of] [people|residents|volunteers] [attended|turned up at|packed "
    "into] [a|the] [meeting|briefing|hearing] [last week|on {weekday}|earlier this month].",
    "{Org} [has published|has posted|will publish] [a map|a timeline|answers to common questions] "
    "on its website.",
    "[Questions|Concerns] [remain|persist] about [who will pay for maintenance|how the scheme will "
    "be monitored|what happens if costs rise].",
    "The [vote|final vote|decision] [passed|was carried] by {votes}.",
    "[Opposition|Minority] [councillors|members] [called for|demanded|asked for] an [independent "
    "review|external audit|extra hearing] [before|ahead of] [any money is spent|contracts are "
    "signed|work begins].",
    "{P2}, [who has lived|who has worked|who has run a shop] in {Place} for {n10} years, said "
    "[the change|the scheme|the plan] [was overdue|could not come soon enough|deserved a fair "
    "hearing].",
    "[An|A] [earlier|previous|similar] [proposal|attempt|plan] [collapsed|stalled|was shelved] in "
    "{yearpast} [after|when] [funding fell through|a contractor withdrew|control of the council "
    "changed hands].",
    "[Staff|Engineers|Organisers] [will|plan to] [report back|give an update|present findings] to "
    "the [council|board|committee] in {month}.",
    "[The figures|These numbers|The latest data] [do not include|exclude|leave out] [the "
    "surrounding villages|seasonal workers|projects still under review].",
    "[Supporters|Backers] say the [benefits|gains] [will|should] [outweigh|justify] the "
    "[disruption|cost|inconvenience] [within a few years|over time|in the long run].",
    "[A spokesperson|A press officer|A representative] for {Org2} [declined to|would not] "
    "[comment on|discuss] [individual cases|the negotiations|contract details].",
    "[In|During] {yearpast}, [the town|{Place}|the district] [recorded|reported|saw] {num} "
    "[complaints|applications|enquiries] [on the subject|related to the issue|about the matter], "
    "[a figure that|a number which] [rose|grew|climbed] to {num2} [last year|in {yearprev}].",
    "[Independent|Outside] [experts|observers] [cautioned|pointed out|noted] that [early|initial|"
    "short-term] [results|figures|trends] [can be misleading|often change|rarely tell the whole "
    "story].",
    "The [council|board|committee] [is due to|will] [revisit|review|return to] the [matter|"
    "question|plan] [at its next meeting|after the summer break|in {month}].",
    "[For|To] [many|most|some] [families|households|pensioners] in {Place}, [the details|the "
    "practical questions|the timing] [matter|count] more than the [headline|big] [numbers|"
    "promises].",
    "[Parking|Access|Traffic] [during|throughout] the [works|first months] [will be|is to be] "
    "[managed|controlled] [by|through] [temporary signs|a marshal|a booking system].",
    "{P1s} [acknowledged|admitted|conceded] that [mistakes|delays|misunderstandings] had [been "
    "made|occurred|crept in] [earlier|along the way|at the start].",
)

ATTRIBUTIONS = (
    '"{quote}," said {P1}, {P1role}.',
    '"{quote}," {P1s} [said|added|told reporters].',
    '{P1s} [said|put it simply|was blunt]: "{quote}."',
    '"{quote}," said {P2}, [a|an] [resident|shopkeeper|parent|volunteer] [from|in] {Place}.',
    '"{quote}," {P2s} [said|added].',
    '"{quote}," [said|added] {P3}, {P3role}.',
    '[Asked|Pressed] about {thing}, {P1s} [said|replied]: "{quote}."',
    '"{quote}," {P3s} [said|insisted].',
)

HEADLINES = (
    "{Place} [approves|backs|gives green light to] {subj}",
    "[Plans for {subj} in {Place} move ahead|Work on {subj} in {Place} gathers pace]",
    "[Residents divided over|Questions raised over|Cost worries cloud] {subj} [near|in] {Place}",
    "What {subj} [means|will mean] for {Place}",
    "{Place} [waits|looks ahead] as {subj} [takes shape|nears decision]",
)


TOPICS: tuple[Topic, ...] = (
    Topic(
        key="energy",
        section="Energy",
        orgs=("{Place} Community Energy", "the {Place} Power Cooperative"),
        regulators=("the regional grid operator", "the county planning board"),
        roles=(
            "chief executive of {Org}",
            "project director at {Org}",
            "head of operations at {Org}",
        ),
        critics=(
            "an energy analyst at the Institute for Rural Economics",
            "a spokesperson for the Ratepayers' Alliance",
            "a retired electrical engineer",
        ),
        headlines=(
            "{Place} [switches on|signs off on] {subj} [as bills climb|amid grid worries]",
            "Power [shift|boost] for {Place} as {subj} [wins backing|moves forward]",
        ),
        ledes=(
            "{Org} [has won approval|received the final permit] for {subj} [near|on the edge of] "
            "{Place}, a project it says could [supply|power] [up to|as many as] {num2} homes.",
            "[After|Following] [three|several] years of [planning|wrangling], {subj} [outside|"
            "north of] {Place} [is finally going ahead|has cleared its last planning hurdle].",
            "[Electricity|Power] from {subj} [could|should] [start flowing|reach the grid] [by|"
            "before] {month} {year2}, {Org} [said|told the council] on {weekday}.",
        ),
        body=(
            "The grid connection [alone|by itself] [will cost|is expected to cost] {money}, [a "
            "figure|an amount] that [includes|covers] [a new transformer|upgraded cabling] [at|"
            "near] the {Place2} substation.",
            "[Engineers|Planners] [estimate|calculate] that {thing} [will|could] [help cut|help "
            "reduce] [local|regional] carbon emissions by [roughly|about] {num} tonnes a year.",
            "[Household|Domestic] [bills|tariffs] are [not expected|unlikely] to [fall|drop] "
            "[straight away|immediately], [because|since] [wholesale prices|network charges] "
            "are set [regionally|nationally].",
            "The grid operator has [warned|cautioned] that [congestion|bottlenecks] on [overhead "
            "lines|the high-voltage network] [could|may] [delay|hold up] the [connection|"
            "switch-on] [by months|until {year2}].",
            "[On sunny afternoons|On windy nights|At peak times] the [local network|district] "
            "[already|sometimes] [exports|sends] surplus power [to|towards] {Place2}.",
            "[Profits|Surplus income] from {subj} [will go|are pledged] to a [community fund|"
            "local benefit fund] [for|that pays for] [loft insulation|energy advice] [in|across] "
            "{Place}.",
            "[Each|Every] household [in the parish|within two miles] [would receive|is promised] "
            "[an annual|a yearly] [discount|rebate] of [around|about] ${n10}.",
            "[Critics|Opponents] [point out|argue] that [intermittent|weather-dependent] "
            "[generation|supply] [still needs|must be matched by] [backup|reliable] capacity "
            "[elsewhere|on the grid].",
            "The [environmental|ecological] [survey|assessment] [found|recorded] [skylarks|bats|"
            "great crested newts] [near|around] {thing}, [requiring|prompting] [extra|special] "
            "[mitigation|protection] work.",
            "[Installers|Contractors] [from|based in] {Place2} [are expected to|will] [carry out|"
            "handle] [most of|much of] the [work|installation], [creating|bringing] [about|around] "
            "{n10} [temporary|short-term] jobs.",
            "[A|The] [monitoring|metering] [dashboard|website] [will show|is to display] [live|"
            "half-hourly] [output|generation figures] so residents [can|are able to] [follow|"
            "track] its performance.",
        ),
        quotes=(
            "[Every|Each] kilowatt-hour we make here is one we do not have to [import|buy in] "
            "from [far away|elsewhere]",
            "[We|This community] [spent|took] years [arguing|talking] about this, and now we "
            "[finally|actually] have something to show for it",
            "The [grid|network] was [built|designed] for a world of [big|large] power stations, "
            "not [hundreds|thousands] of small ones",
            "I am [not against|not opposed to] clean energy, I just want [the numbers|the costs] "
            "to [add up|be honest]",
            "[Winter|Cold weather] is when people [really|truly] feel their bills, and that is "
            "when we need [this to work|the most help]",
            "[The fund|The rebate] [means|ensures] the [benefit|money] [stays|remains] in {Place} "
            "[rather than|instead of] [leaving town|going to distant shareholders]",
        ),
        subjects=(
            Subject(
                slug="solar-farm",
                name="the solar farm",
                things=(
                    "the panel rows",
                    "the inverter building",
                    "the perimeter hedgerow",
                    "the new access track",
                ),
                facts=(
                    "The solar farm would occupy {num} acres of low-grade grazing land south of "
                    "{Place}, screened from the lane by a double line of young oaks.",
                    "Sheep are allowed to graze between the panel rows, an arrangement the "
                    "developer says keeps the grass short without mowers or herbicides.",
                    "Glare from the panels was raised by pilots at the {Place2} gliding club, "
                    "but a consultant's study concluded the risk to aircraft was negligible.",
                    "Every panel sits on a steel frame pushed into the soil with no concrete "
                    "foundations, so the field can be returned to pasture afterwards.",
                    "Output will peak in midsummer and drop to a small share of that during "
                    "the short, overcast days of December.",
                    "The panel supplier was selected after a bidding round that drew {n} "
                    "offers from manufacturers in three countries.",
                    "A public footpath running through the site will remain open, with fresh "
                    "kissing gates and signs at either end.",
                    "Beehives and wildflower strips are planned along the southern fence to "
                    "attract pollinators back to the meadow.",
                ),
            ),
            Subject(
                slug="offshore-wind-cable",
                name="the offshore wind connection",
                things=(
                    "the turbine foundations",
                    "the export cable",
                    "the onshore converter station",
                    "the cable landfall at the dunes",
                ),
                facts=(
                    "The array calls for {n10} turbines roughly twenty miles off the coast, "
                    "with a subsea cable coming ashore in the dunes north of {Place}.",
                    "From the landfall the cable would run underground beneath farmland to a "
                    "converter station beside the old railway sidings.",
                    "Crab and lobster fishermen worry that the turbine bases will restrict "
                    "access to grounds their families have worked for generations.",
                    "The harbour at {Place} is bidding to become the service hub, with crew "
                    "transfer vessels sailing out at first light every day.",
                    "Each turbine would stand taller than the cathedral spire, with blades "
                    "longer than a football pitch is wide.",
                    "Seabird counts made from aircraft over two breeding seasons logged "
                    "gannets and guillemots diving for fish inside the lease area.",
                    "Hammering steel piles into the seabed is restricted to months outside "
                    "the porpoise calving season.",
                    "Surfers have asked for the beach to stay open while the cable trench is "
                    "dug across the sand at low tide.",
                ),
            ),
            Subject(
                slug="battery-storage-plant",
                name="the battery storage plant",
                things=(
                    "the battery containers",
                    "the fire suppression system",
                    "the cooling units",
                    "the acoustic fence",
                ),
                facts=(
                    "The plant would store enough electricity to run {num2} homes for about "
                    "two hours during the evening peak.",
                    "The cells fill up when prices are low, usually overnight or at midday, "
                    "and sell power back when demand climbs after dark.",
                    "The fire service has asked for water tanks at the entrance and an "
                    "emergency response plan should one of the containers catch fire.",
                    "Residents on Mill Road complained about the low hum of cooling fans, so "
                    "the operator has promised a four-metre acoustic barrier.",
                    "Lithium iron phosphate chemistry is regarded as less prone to thermal "
                    "runaway than the cells used in earlier installations.",
                    "The containers will be laid out in {n} rows behind the existing switching "
                    "yard on Tanner's Lane.",
                    "Traders acting for the owner can sell its capacity into the balancing "
                    "market in half-hour slots, day and night.",
                    "A drainage pond will catch any water used in firefighting so that it does "
                    "not reach the brook behind the site.",
                ),
            ),
            Subject(
                slug="heat-pump-grants",
                name="the heat pump grant scheme",
                things=(
                    "the outdoor units",
                    "the radiator upgrades",
                    "the home surveys",
                    "the installer training course",
                ),
                facts=(
                    "Homeowners in {Place} may apply for grants of up to $7,500 toward "
                    "installing an air-source or ground-source heat pump.",
                    "Each home assessment measures draughts, insulation and radiator sizes "
                    "before an installation is approved.",
                    "Victorian terraces near the market square often need larger radiators "
                    "and loft insulation before a heat pump can run efficiently.",
                    "Only {n10} firms in the county are accredited to fit the systems, "
                    "creating waiting lists of several months.",
                    "The pumps draw heat from the outside air even in sub-zero temperatures, "
                    "using electricity to move it indoors.",
                    "Tenants may not apply themselves, though landlords can submit applications "
                    "for the properties they own.",
                    "An evening workshop at the technical college hopes to double the number of "
                    "qualified fitters within {n} years.",
                    "Noise limits mean the outdoor units must sit at least a metre from a "
                    "neighbour's boundary wall.",
                ),
            ),
        ),
    ),
    Topic(
        key="transport",
        section="Transport",
        orgs=("{Place} Transit Authority", "the {Place} Roads and Rail Partnership"),
        regulators=("the county highways department", "the national rail regulator"),
        roles=(
            "director of services at {Org}",
            "chief planner at {Org}",
            "the councillor responsible for transport",
        ),
        critics=(
            "chair of the {Place} Commuters' Association",
            "a transport economist at Westmoor University",
            "a spokesperson for the Freight Drivers' Guild",
        ),
        headlines=(
            "[Commuters|Passengers] in {Place} [brace for|prepare for] changes to {subj}",
            "{Place} [bets on|banks on] {subj} to [ease congestion|cut journey times]",
        ),
        ledes=(
            "[Passengers|Commuters] in {Place} [face|can expect] [months of disruption|a summer of "
            "roadworks] [before|until] {subj} [opens|is ready] in {year2}, {Org} [said|warned] on "
            "{weekday}.",
            "{Org} [has unveiled|set out] [detailed|final] plans for {subj}, [promising|pledging] "
            "[shorter|faster] journeys [between|linking] {Place} and {Place2}.",
            "[The long-awaited|The much-delayed] {subj} [has moved|took] a step closer after "
            "{Org2} [signed off|approved] the [business case|funding package].",
        ),
        body=(
            "[Morning|Rush-hour] journeys between {Place} and {Place2} [currently|now] take [up "
            "to|as long as] {n10} minutes [in|because of] [heavy|stop-start] traffic.",
            "[Ticket|Fare] prices [will|are to] [stay|remain] [frozen|unchanged] [for|during] the "
            "first year, [after which|and then] [a review|an inflation-linked rise] [is due|"
            "applies].",
            "[Bus|Coach] [operators|companies] [were|have been] [consulted|asked] about [diverted|"
            "temporary] routes [while|for as long as] work on {thing} [continues|goes on].",
            "[Cyclists|Pedestrians] [asked|pressed] for [safer|protected] [crossings|junctions] "
            "[at|near] the [station approach|market roundabout].",
            "[Passenger|Footfall] [counts|numbers] [have|had] [recovered|returned] to [about|"
            "nearly] {pct} of [pre-pandemic|earlier] levels [by|in] {yearprev}.",
            "[A|The] [traffic|transport] [model|study] [commissioned|paid for] by {Org} "
            "[predicts|suggests] [roughly|about] {num2} [fewer|less] car trips [a day|each week].",
            "[Night|Weekend] [closures|shutdowns] [will|are expected to] [allow|let] [crews|"
            "engineers] to [work|finish] [without|with less] [disruption|delay] [to|for] "
            "daytime services.",
            "[Disabled|Older] [passengers|travellers] [want|have asked for] [step-free|level] "
            "[access|boarding] [at|on] every [stop|platform] [from|on] day one.",
            "[Freight|Delivery] [firms|drivers] [fear|say] [narrower|restricted] [lanes|roads] "
            "[will|could] [add|mean] [time|extra cost] to [deliveries|every round].",
            "[Real-time|Live] [departure boards|arrival information] [will be|are to be] "
            "[installed|fitted] [at|along] [the main stops|each station] [before|ahead of] the "
            "[launch|opening].",
        ),
        quotes=(
            "[People|Commuters] do not [mind|object to] [roadworks|disruption] [if|as long as] "
            "they can see [an end date|the finish line]",
            "[A bus that|A service that] [turns up|runs] [when it says it will|on time] is worth "
            "more than [any|a shiny] new [logo|brochure]",
            "We [built|designed] this town around the car [fifty years ago|for decades], and "
            "[undoing that|changing it] [takes|will take] time",
            "[If|When] the [fares|tickets] are [too high|not affordable], [nobody|no one] will "
            "[use|ride] it, [however|no matter how] [modern|fast] it is",
            "[My|Our] [customers|delivery vans] [cannot|do not] [wait|sit] [in queues|in traffic] "
            "[all morning|for hours]",
            "[Getting|Persuading] [people|drivers] out of their cars [starts|begins] with "
            "[reliability|trust]",
        ),
        subjects=(
            Subject(
                slug="tram-extension",
                name="the tram extension",
                things=(
                    "the new tram stops",
                    "the overhead wires",
                    "the depot sidings",
                    "the river bridge",
                ),
                facts=(
                    "The extension adds {n} kilometres of track and six stops, running from the "
                    "station forecourt out to the hospital campus at {Place2}.",
                    "Overhead wires will be hung from poles that double as street lights, "
                    "cutting the clutter along Castle Street.",
                    "A steel bridge over the river has to be strengthened to carry trams "
                    "weighing more than forty tonnes when full.",
                    "Trams will run every six minutes at peak times and every twelve in the "
                    "late evening.",
                    "The depot sidings at the old gasworks will hold eight extra vehicles, "
                    "ordered from a builder in northern Spain.",
                    "Archaeologists will watch the trench along Abbey Lane, where medieval "
                    "pottery turned up during a sewer repair.",
                    "Shopkeepers on Castle Street are promised a compensation fund for lost "
                    "trade while the rails are laid.",
                    "Tickets will be valid across trams and buses for ninety minutes after "
                    "the first tap.",
                ),
            ),
            Subject(
                slug="electric-buses",
                name="the electric bus fleet",
                things=(
                    "the charging depot",
                    "the new double-deckers",
                    "the overhead pantograph chargers",
                    "the battery packs",
                ),
                facts=(
                    "The order covers {n10} electric double-deckers, replacing diesel buses "
                    "that in some cases are older than their drivers' children.",
                    "Buses will charge overnight at the depot on Foundry Way and top up at "
                    "pantograph masts at the two busiest terminals.",
                    "Each vehicle carries a battery pack weighing close to three tonnes under "
                    "the rear seats.",
                    "Drivers have spent two weeks learning how regenerative braking changes "
                    "the way the bus slows down for stops.",
                    "Winter range tests on the hill up to {Place2} showed heating the cabin "
                    "eats into the battery more than expected.",
                    "The depot needed a dedicated high-voltage supply, delivered by the grid "
                    "operator eighteen months behind schedule.",
                    "Passengers will notice USB sockets at every seat pair and quieter "
                    "engines, particularly on the upper deck.",
                    "The retired diesel buses are being sold to a tour company and a driving "
                    "school.",
                ),
            ),
            Subject(
                slug="cycle-lanes",
                name="the protected cycle lanes",
                things=(
                    "the kerb separators",
                    "the junction redesign",
                    "the bike parking hubs",
                    "the school street trial",
                ),
                facts=(
                    "The network would link {n} schools and the college with kerb-separated "
                    "lanes along the ring road.",
                    "Roughly {num} parking spaces on Bridge Street would be removed to make "
                    "room for the lanes.",
                    "A trial closure outside the primary school at drop-off time cut traffic "
                    "on the street by more than half.",
                    "Covered bike parking hubs with room for forty bicycles are planned at the "
                    "station and the leisure centre.",
                    "Taxi drivers say the redesigned junction at Gallows Corner leaves them "
                    "nowhere to pick up passengers.",
                    "Parents formed a cycle train that rides to school together every "
                    "Wednesday, marshalled by volunteers in yellow vests.",
                    "Counters buried in the tarmac will record every bicycle that passes, with "
                    "figures published monthly.",
                    "The lanes will be swept by a narrow electric sweeper bought for the purpose.",
                ),
            ),
            Subject(
                slug="rail-timetable",
                name="the new rail timetable",
                things=(
                    "the extra evening trains",
                    "the platform extension",
                    "the connecting shuttle",
                    "the signalling upgrade",
                ),
                facts=(
                    "The timetable adds a second train an hour between {Place} and the city, "
                    "and a last departure after eleven at night.",
                    "Platform two must be lengthened so that six-carriage trains can stop "
                    "without the rear doors opening beyond the ramp.",
                    "A resignalling scheme on the junction outside {Place2} made the extra "
                    "paths possible.",
                    "Some early morning trains will no longer stop at the halt by the "
                    "reservoir, angering the village of Coldharbour.",
                    "A shuttle minibus will connect the station with the business park until "
                    "a footbridge is built.",
                    "Season ticket holders will be able to switch to flexible carnets valid "
                    "for eight journeys in a month.",
                    "Timetable planners had to fit the new trains around freight services to "
                    "the quarry.",
                    "Station staff will stay until the last train instead of leaving at eight.",
                ),
            ),
        ),
    ),
    Topic(
        key="health",
        section="Health",
        orgs=("{Place} General Hospital", "the {Place} Health Trust"),
        regulators=("the regional health authority", "the care quality inspectorate"),
        roles=(
            "medical director at {Org}",
            "chief nurse at {Org}",
            "a consultant physician at {Org}",
        ),
        critics=(
            "a representative of the patients' forum",
            "a health policy researcher at Kingsmere University",
            "a local general practitioner",
        ),
        headlines=(
            "[Patients|Families] in {Place} [to benefit from|wait for] {subj}",
            "[Doctors|Nurses] [welcome|cautiously back] {subj} in {Place}",
        ),
        ledes=(
            "[Patients|Families] in {Place} [should|will] [soon|from {month}] [notice|see] the "
            "[effects|first results] of {subj}, {Org} [said|announced] on {weekday}.",
            "{Org} [is to|will] [launch|introduce] {subj} [after|following] [a rise in|record] "
            "[demand|referrals] [over the winter|last year].",
            "[Health chiefs|Hospital managers] in {Place} [have defended|stood by] {subj} "
            "[despite|amid] [concerns|questions] about [staffing|funding].",
        ),
        body=(
            "[Waiting|Referral] times [for|at] [routine|non-urgent] [appointments|clinics] [have|"
            "had] [grown|lengthened] to [about|nearly] {n10} weeks.",
            "[Staff|Clinicians] [will|are to] [receive|be given] [extra|additional] [training|"
            "supervision] [before|as] {thing} [begins|starts].",
            "[Patient|Service user] [surveys|feedback] [show|suggests] that [most|many] "
            "[people|patients] [want|prefer] [appointments|contact] [closer to home|outside "
            "working hours].",
            "[Recruitment|Hiring] of [nurses|physiotherapists|pharmacists] [remains|is still] "
            "[the biggest|a serious] [challenge|hurdle] [for|facing] {Org}.",
            "{Org2} [rated|judged] the [trust|service] [as requiring improvement|adequate] "
            "[at|after] its [last|most recent] inspection.",
            "[Data|Figures] [from|published by] {Org} [show|indicate] {num} [people|patients] "
            "[were|have been] [treated|seen] [in|during] the [pilot|first] [months|phase].",
            "[Community|Volunteer] [drivers|helpers] [will|can] [take|bring] [elderly|housebound] "
            "patients to [appointments|clinics] [free of charge|at no cost].",
            "[Medical|Clinical] [records|notes] [will be|are to be] [shared|available] "
            "[securely|electronically] [between|across] [surgeries|clinics] and the hospital.",
            "[Unions|Staff representatives] [have|had] [asked|pressed] for [guarantees|"
            "assurances] [on|about] [rotas|working hours] and [parking|travel costs].",
            "[Pharmacies|Chemists] [in|around] {Place} [will|are to] [play|take on] a [bigger|"
            "larger] [role|part] in [minor ailments|repeat prescriptions].",
        ),
        quotes=(
            "[Nobody|No one] [goes into|chooses] nursing [to|in order to] [fill in|complete] "
            "[forms|spreadsheets] all day",
            "[For|To] [a|an] [frail|elderly] patient, [a bus ride|an hour's journey] to hospital "
            "[can be|is] [exhausting|an ordeal] [in itself|on its own]",
            "[We|The team] [would rather|want to] [see|catch] [problems|illness] [early|before "
            "they become emergencies]",
            "The [waiting list|backlog] [did not|will not] [appear|disappear] overnight",
            "[Patients|People] [tell us|keep telling us] they [want|need] [continuity|to see the "
            "same face]",
            "[Money|Funding] [alone|by itself] [does not|will not] [fix|solve] a [shortage|lack] "
            "of [trained|skilled] [staff|people]",
        ),
        subjects=(
            Subject(
                slug="waiting-list-plan",
                name="the waiting list recovery plan",
                things=(
                    "the weekend theatre lists",
                    "the new day surgery unit",
                    "the hip and knee clinic",
                    "the patient tracking system",
                ),
                facts=(
                    "Operating theatres will open on Saturdays and Sundays to work through a "
                    "backlog of {num2} planned operations.",
                    "A day surgery unit in the former outpatients block will handle cataract "
                    "and hernia operations without overnight stays.",
                    "Hip and knee patients waiting longer than a year will be offered surgery "
                    "at a partner hospital in {Place2}.",
                    "Every patient on the list will receive a phone call to check whether "
                    "their condition has changed.",
                    "Anaesthetists agreed to the weekend lists in exchange for protected "
                    "training days.",
                    "A tracking system will text patients with their position on the list "
                    "every month.",
                    "The trust expects to clear waits of over eighteen months by the end of "
                    "next spring.",
                    "Physiotherapy classes before surgery aim to shorten recovery after joint "
                    "replacement.",
                ),
            ),
            Subject(
                slug="flu-vaccination",
                name="the winter flu vaccination drive",
                things=(
                    "the pop-up clinics",
                    "the school nasal spray programme",
                    "the mobile vaccination van",
                    "the booking line",
                ),
                facts=(
                    "Pop-up clinics will run in the supermarket car park and the mosque hall "
                    "on weekday evenings throughout October.",
                    "Children in reception and primary classes will be offered a nasal spray "
                    "instead of an injection.",
                    "A converted library van will visit outlying farms and caravan parks "
                    "where uptake was lowest last winter.",
                    "Last year only {pct} of care home staff in the district were vaccinated.",
                    "The booking line will be staffed by trained volunteers from the Rotary "
                    "club and the university medical school.",
                    "People over sixty-five will be offered the flu jab and a booster for "
                    "other respiratory viruses at the same visit.",
                    "Stock is stored in fridges monitored by sensors that alert a pharmacist "
                    "if the temperature drifts.",
                    "Translators will be available at clinics in Polish, Urdu and Portuguese.",
                ),
            ),
            Subject(
                slug="rural-clinic",
                name="the rural health clinic",
                things=(
                    "the consulting rooms",
                    "the telemedicine link",
                    "the clinic pharmacy",
                    "the visiting specialist sessions",
                ),
                facts=(
                    "The clinic occupies the former village school in Upper {Place}, closed "
                    "three years ago when pupil numbers fell below twenty.",
                    "A telemedicine link lets patients speak to hospital specialists on a "
                    "large screen with a nurse in the room.",
                    "Before the clinic opened, the nearest surgery was a forty-minute drive "
                    "along single-track roads.",
                    "Visiting specialists in diabetes and heart failure will hold sessions "
                    "there once a fortnight.",
                    "A small dispensing pharmacy means patients no longer wait days for "
                    "prescriptions delivered by post.",
                    "The parish council raised {money} through a land sale to pay for the "
                    "conversion.",
                    "Two nurse practitioners and a part-time doctor will staff the building "
                    "four days a week.",
                    "An ambulance bay behind the old playground lets crews collect patients "
                    "without blocking the lane.",
                ),
            ),
            Subject(
                slug="mental-health-helpline",
                name="the mental health helpline",
                things=(
                    "the night shift call handlers",
                    "the text message service",
                    "the crisis café",
                    "the follow-up calls",
                ),
                facts=(
                    "The helpline will answer calls around the clock, staffed by trained "
                    "call handlers and two mental health nurses at night.",
                    "A text message service is aimed at teenagers, who rarely choose to phone.",
                    "A crisis café above the library will open from six until midnight as an "
                    "alternative to the emergency department.",
                    "Callers who agree will receive a follow-up call within forty-eight hours.",
                    "Police officers in {Place} spend an estimated {num} hours a month waiting "
                    "with people in mental distress at the hospital.",
                    "Volunteers must complete a twelve-week course and supervised shifts "
                    "before taking calls alone.",
                    "The service was designed with people who had used crisis services themselves.",
                    "Farmers' groups asked for outreach in the livestock markets, where "
                    "isolation is a growing worry.",
                ),
            ),
        ),
    ),
    Topic(
        key="farming",
        section="Farming",
        orgs=("the {Place} Growers' Cooperative", "{Place} Agricultural Society"),
        regulators=("the rural payments agency", "the county farm advisory service"),
        roles=(
            "chair of {Org}",
            "an agronomist working with {Org}",
            "secretary of {Org}",
        ),
        critics=(
            "a food economist at Ashcombe Agricultural College",
            "a spokesperson for the Ramblers' Federation",
            "a neighbouring landowner",
        ),
        headlines=(
            "[Farmers|Growers] near {Place} [turn to|pin hopes on] {subj}",
            "[Harvest|Season] [test|trial] for {subj} [outside|around] {Place}",
        ),
        ledes=(
            "[Farmers|Growers] [around|near] {Place} are [turning to|trying] {subj} [after|"
            "following] [a|another] [difficult|punishing] [season|year] [in|across] the valley.",
            "{Org} [says|believes] {subj} [could|may] [help|allow] [dozens of|many] [farms|"
            "smallholdings] [to|] [stay|remain] [profitable|in business].",
            "[A|The] [wet|dry] [spring|summer] [has|had] [put|placed] {subj} [at the centre|at "
            "the heart] of [a|the] [debate|conversation] about [farming|food] [near|in] {Place}.",
        ),
        body=(
            "[Fertiliser|Feed] [prices|costs] [nearly|almost] [doubled|rose sharply] [in|during] "
            "{yearprev}, [squeezing|eroding] [margins|profits] [on|across] [small|family] farms.",
            "[Soil|Field] [samples|tests] [taken|collected] [across|from] {n10} [farms|fields] "
            "[showed|revealed] [falling|declining] [organic matter|fertility].",
            "[Rainfall|Precipitation] [in|over] the [growing season|spring months] was {pct} "
            "[below|above] the [long-term|thirty-year] average.",
            "[Seasonal|Casual] [workers|pickers] [remain|are still] [hard|difficult] to "
            "[recruit|find] [for|at] [harvest|picking] time.",
            "{Org2} [offers|provides] [payments|support] [to|for] farmers who [plant|leave] "
            "[hedgerows|field margins] [for|to help] [wildlife|birds].",
            "[Supermarket|Retail] [contracts|buyers] [rarely|seldom] [reward|pay for] [the extra|"
            "additional] [effort|cost] of {thing}, [growers|farmers] [say|complain].",
            "[Many|Most] [farmers|growers] in the [valley|parish] are [over|older than] sixty, "
            "and [few|not many] have [a successor|children who want to take over].",
            "[Ramblers|Walkers] [have|had] [asked|requested] that [stiles|gates] [on|along] "
            "[public|permissive] [paths|routes] [be|are] [kept|left] [open|clear].",
            "[Farm shop|Market] [sales|takings] [rose|grew] [by|about] {pct} [as|when] "
            "[shoppers|customers] [looked|went] [for|in search of] local [produce|food].",
            "[Machinery|Equipment] [sharing|pools] [between|among] [neighbouring|nearby] farms "
            "[have|has] [cut|reduced] [costs|overheads] [for|at] [several|some] [members|farms].",
        ),
        quotes=(
            "[You|We] [cannot|can't] [argue with|control] the weather, [only|but you can] "
            "[plan|prepare] for it",
            "[My grandfather|My father] [farmed|worked] this [land|ground] [without|with no] "
            "[spreadsheets|subsidy forms], but [times|things] have [changed|moved on]",
            "[If|When] the [price|margin] is not there, [nobody|no one] [will|can] [keep|stay] "
            "[going|farming] [for long|forever]",
            "[Healthy|Good] soil is the [only|one] [asset|thing] on this farm that [grows|gains] "
            "in value [every year|if you look after it]",
            "[People|Shoppers] [say|tell us] they want local food, [and|so] [now|this is] "
            "[we will see|the test of] whether they [buy|pay for] it",
            "[We|Our members] [are|remain] [cautiously|quietly] [optimistic|hopeful] about "
            "[next year|the coming season]",
        ),
        subjects=(
            Subject(
                slug="drought-wheat-harvest",
                name="the drought-hit wheat harvest",
                things=(
                    "the winter wheat",
                    "the irrigation reservoir",
                    "the grain store",
                    "the straw bales",
                ),
                facts=(
                    "Yields of winter wheat fell to about six tonnes a hectare, well short of "
                    "the eight a typical year brings on the clay soils around {Place}.",
                    "Grain protein was unusually high, which pleased millers even as the "
                    "volumes disappointed.",
                    "A shared irrigation reservoir dug into the chalk holds enough water for "
                    "potatoes but not for cereals.",
                    "Straw prices climbed so high that livestock farmers in the hills bought "
                    "bales from as far away as the east coast.",
                    "Some growers are switching part of their land to drought-tolerant "
                    "sorghum and lentils.",
                    "Combine harvesters worked through the night to beat thunderstorms forecast "
                    "for the bank holiday.",
                    "The grain store on the old airfield reported moisture readings lower than "
                    "any in its twenty-year records.",
                    "Insurers paid out on only a handful of policies because most cover "
                    "excludes drought.",
                ),
            ),
            Subject(
                slug="beekeeping-project",
                name="the community beekeeping project",
                things=(
                    "the apiary",
                    "the wildflower corridor",
                    "the honey extraction room",
                    "the varroa mite checks",
                ),
                facts=(
                    "The apiary behind the allotments now holds {n10} hives tended by "
                    "volunteers who trained over the winter.",
                    "A wildflower corridor sown along the disused railway line gives the bees "
                    "forage from April until the first frosts.",
                    "Volunteers check each colony for varroa mites every fortnight and log the "
                    "counts in a shared notebook.",
                    "Honey is spun in an extraction room borrowed from the village hall kitchen.",
                    "Jars sold at the Saturday market paid for protective suits for new members.",
                    "A swarm that settled on the church porch in May was collected by the "
                    "youngest beekeeper, aged fourteen.",
                    "Orchard owners nearby report better fruit set since the hives arrived.",
                    "The group is testing a hive design with thicker walls for colder winters.",
                ),
            ),
            Subject(
                slug="community-orchard",
                name="the community orchard",
                things=(
                    "the heritage apple trees",
                    "the cider press",
                    "the grafting workshop",
                    "the orchard meadow",
                ),
                facts=(
                    "The orchard on the old bowling green holds {n10} varieties of apple, "
                    "several of them once thought lost in the county.",
                    "Cuttings were taken from a gnarled tree in a churchyard and grafted onto "
                    "new rootstock in February.",
                    "A hand-cranked cider press is brought out each October for Apple Day, when "
                    "anyone may bring fruit.",
                    "The grass between the trees is cut once a year to let cowslips and "
                    "orchids return.",
                    "Pupils from the primary school planted a pear tree for every child in "
                    "the leaving class.",
                    "Mistletoe is pruned carefully so it does not smother the older trees.",
                    "Labels with QR codes tell visitors where each variety was first grown.",
                    "Fallen fruit is left for blackbirds and fieldfares through the winter.",
                ),
            ),
            Subject(
                slug="dairy-cooperative",
                name="the dairy cooperative",
                things=(
                    "the shared milk tanker",
                    "the cheese dairy",
                    "the vending machines",
                    "the herd records",
                ),
                facts=(
                    "Eleven dairy farms have pooled their milk so they can negotiate with "
                    "processors as a single supplier.",
                    "A shared tanker collects from every member each morning before seven.",
                    "Part of the milk now goes to a small cheese dairy in a converted barn, "
                    "which makes a washed-rind cheese aged for eight weeks.",
                    "Milk vending machines at the farm gates sell raw milk pasteurised on site "
                    "by the bottle.",
                    "Members compare herd records to spot lameness and fertility problems earlier.",
                    "The cooperative was founded after a processor cut the price it paid by "
                    "two pence a litre with a month's notice.",
                    "Young farmers can rent a few cows through the group to start their own herds.",
                    "Whey from the cheese dairy is fed to pigs on a neighbouring farm.",
                ),
            ),
        ),
    ),
    Topic(
        key="science",
        section="Science",
        orgs=("the {Place} Observatory", "the {Place} Institute for Space Science"),
        regulators=("the national science council", "the space licensing office"),
        roles=(
            "principal investigator at {Org}",
            "director of {Org}",
            "a senior research fellow at {Org}",
        ),
        critics=(
            "an astronomer at the University of Fernmoor",
            "a science funding analyst",
            "an amateur astronomer who chairs the local society",
        ),
        headlines=(
            "[Scientists|Researchers] in {Place} [celebrate|unveil] {subj}",
            "[Eyes on the sky|Star gazing] [as|while] {Place} [launches|opens] {subj}",
        ),
        ledes=(
            "[Scientists|Researchers] at {Org} [have|] [completed|unveiled] {subj}, [a|the] "
            "[project|venture] [years|nearly a decade] in the making.",
            "{Subj} [could|may] [change|transform] [how|the way] [astronomers|researchers] "
            "[study|observe] [the sky|the solar system], [according to|say] [scientists|the "
            "team] [at|in] {Place}.",
            "[Funding|Money] for {subj} [was|has been] [confirmed|secured] [this week|on "
            "{weekday}], [ending|after] [months|a year] of uncertainty at {Org}.",
        ),
        body=(
            "[Data|Observations] [will be|are to be] [released|made public] [after|within] "
            "[a year|twelve months] [so that|allowing] [other|outside] [groups|researchers] "
            "[can|to] [analyse|study] [them|it].",
            "[Light pollution|Street lighting] [from|in] {Place2} [has|had] [grown|spread] "
            "[steadily|markedly] [over|during] the past [decade|twenty years].",
            "[Graduate|Doctoral] [students|researchers] [will|are to] [write|build] [much of|"
            "most of] the [software|analysis code] [for|behind] {thing}.",
            "[The|A] [team|collaboration] [includes|brings together] [researchers|scientists] "
            "from {n} [countries|universities].",
            "[Public|Open] [viewing|observing] [nights|evenings] [will be held|take place] "
            "[monthly|once a month] [when|if] the [sky|weather] [is clear|allows].",
            "[Calibration|Testing] of {thing} [took|lasted] [longer|more time] than [planned|"
            "expected] [because of|owing to] [a faulty|an unexpected] [component|reading].",
            "[Results|Findings] [from|of] the [first|early] [run|observations] [are due|will be "
            "submitted] to [a journal|peer review] [by|before] {month}.",
            "{Org2} [contributed|provided] {money} [of|toward] the [total|overall] [cost|budget].",
            "[Schools|Classrooms] [across|in] the [county|region] [will|can] [request|book] "
            "[remote|online] [time|sessions] [on|with] {thing}.",
            "[Engineers|Technicians] [built|assembled] [much of|most of] the [hardware|"
            "equipment] [in|at] a [workshop|clean room] [on|at] the [campus|site].",
        ),
        quotes=(
            "[Every|Each] [photon|speck of light] we [catch|collect] [has|may have] [travelled|"
            "been travelling] [for|across] [billions of years|unimaginable distances]",
            "[Science|Research] [is|remains] [slow|patient] work, [and|but] [moments|nights] "
            "like this [make|are what make] it worthwhile",
            "[We|The team] [expect|hope] to be surprised, [because|since] [that|surprise] is "
            "[how|where] [discoveries|the best science] [happen|begins]",
            "[Dark|Clear] skies are a [resource|heritage] [worth|that deserves] protecting, "
            "[like|just like] [clean rivers|ancient woodland]",
            "[Children|Young people] who [look|peer] through a telescope [never|rarely] "
            "[forget|lose] [it|that moment]",
            "[Funding|Money] for [basic|curiosity-driven] research [always|never] [feels|seems] "
            "[secure|certain] [enough|until it arrives]",
        ),
        subjects=(
            Subject(
                slug="cubesat-launch",
                name="the student-built satellite",
                things=(
                    "the shoebox-sized satellite",
                    "the ground station dish",
                    "the solar panels on the satellite",
                    "the radio beacon",
                ),
                facts=(
                    "The satellite is about the size of a shoebox and weighs just under four "
                    "kilograms.",
                    "Students spent {n} years building it, testing parts in a vacuum chamber "
                    "borrowed from a medical physics lab.",
                    "It will ride to orbit as a secondary payload alongside a commercial "
                    "weather satellite.",
                    "A dish on the roof of the engineering building will track it for ten "
                    "minutes on each pass overhead.",
                    "Its radio beacon transmits the satellite's name in Morse code so that "
                    "amateur operators can listen in.",
                    "The main experiment measures how quickly a new kind of solar cell degrades "
                    "in space.",
                    "After about three years its orbit will decay and it will burn up harmlessly.",
                    "Two of the original team now work for rocket companies.",
                ),
            ),
            Subject(
                slug="telescope-upgrade",
                name="the telescope upgrade",
                things=(
                    "the new mirror",
                    "the adaptive optics",
                    "the rotating dome",
                    "the spectrograph",
                ),
                facts=(
                    "The observatory's century-old dome now houses a one-metre mirror ground "
                    "from a single block of low-expansion glass.",
                    "Adaptive optics correct the twinkling caused by turbulence dozens of "
                    "times a second.",
                    "The dome's rusted rotation motor was replaced with a quieter one salvaged "
                    "from a decommissioned planetarium.",
                    "A new spectrograph splits starlight into thousands of colours to measure "
                    "the motion of distant stars.",
                    "The original brass telescope, installed in 1908, will be restored for "
                    "public viewing nights.",
                    "The hilltop above {Place} was chosen in Victorian times for its steady air "
                    "and lack of fog.",
                    "Observers can now operate the telescope remotely from a laptop.",
                    "The upgrade team includes a retired clockmaker who rebuilt the dome's "
                    "shutter gears.",
                ),
            ),
            Subject(
                slug="comet-observation",
                name="the comet observing campaign",
                things=(
                    "the comet's tail",
                    "the network of backyard telescopes",
                    "the brightness measurements",
                    "the observing log",
                ),
                facts=(
                    "The comet should be visible to the naked eye in the western sky just "
                    "after sunset for about two weeks.",
                    "Amateurs across the county are photographing it every clear night to "
                    "track changes in its tail.",
                    "Its nucleus is thought to be roughly five kilometres wide, a dirty "
                    "snowball left from the birth of the solar system.",
                    "The comet last passed near the Sun some six thousand years ago.",
                    "Brightness measurements gathered by volunteers will be combined into a "
                    "single light curve.",
                    "A sudden outburst in {month} made it briefly brighter than predicted.",
                    "The best views will come from the reservoir car park, away from street "
                    "lights.",
                    "Schools have been sent star charts showing where to look.",
                ),
            ),
            Subject(
                slug="lunar-sample-lab",
                name="the lunar sample laboratory",
                things=(
                    "the nitrogen glovebox",
                    "the moon rock fragments",
                    "the electron microscope",
                    "the sample vault",
                ),
                facts=(
                    "The laboratory has been lent a few grams of lunar soil to study how "
                    "moon dust damages seals and spacesuits.",
                    "Samples are handled inside a glovebox filled with dry nitrogen so they "
                    "never touch Earth's moist air.",
                    "An electron microscope can image grains thinner than a human hair with "
                    "jagged edges never worn down by wind or water.",
                    "The grains were collected by astronauts more than fifty years ago and kept "
                    "sealed ever since.",
                    "A vault with two separate locks holds the samples when they are not in use.",
                    "The team hopes to design filters for future lunar habitats.",
                    "Visitors can see a replica moon rock in the lobby, cast from a scan of "
                    "the original.",
                    "Every movement of a sample is logged and reported to the lending agency.",
                ),
            ),
        ),
    ),
    Topic(
        key="business",
        section="Business",
        orgs=("{Place} Chamber of Commerce", "the {Place} Enterprise Partnership"),
        regulators=("the regional development bank", "the competition authority"),
        roles=(
            "managing director of the firm",
            "president of {Org}",
            "chief financial officer at the company",
        ),
        critics=(
            "an economist at the Centre for Local Growth",
            "a union organiser",
            "the owner of a rival business",
        ),
        headlines=(
            "{Subj} [lifts|tests] [spirits|confidence] on {Place} high street",
            "[Jobs|Investment] [boost|hopes] [as|after] {subj} [expands|announces plans]",
        ),
        ledes=(
            "{Subj} [in|near] {Place} [plans to|will] [hire|take on] [about|up to] {n10} "
            "[staff|people] [this year|over the next year], {Org} [said|confirmed].",
            "[Traders|Business owners] in {Place} [are watching|have welcomed] {subj} [closely|"
            "with interest] [as|while] [costs|rents] [keep rising|remain high].",
            "[Figures|Accounts] [published|filed] [this week|on {weekday}] [show|suggest] {subj} "
            "[has|had] [grown|expanded] [faster|more quickly] than [expected|forecast].",
        ),
        body=(
            "[Business rates|Rents] on the [high street|main street] [have|had] [risen|climbed] "
            "by [about|nearly] {pct} [since|over] {yearpast}.",
            "[Energy|Utility] [bills|costs] [now|currently] [account for|make up] [a larger|"
            "a bigger] [share|slice] of [overheads|running costs] than [wages|rent].",
            "[Several|A handful of] [shops|units] on [Market|Bridge] Street [have|had] [stood|"
            "remained] [empty|vacant] [for|since] [more than|over] a year.",
            "[Footfall|Visitor numbers] in the town centre [rose|recovered] [by|about] {pct} "
            "[after|when] [the market|parking charges] [moved|were cut].",
            "{Org2} [offered|arranged] a [loan|credit line] of {money} [on|at] [favourable|"
            "below-market] [terms|rates].",
            "[Online|Internet] [sales|orders] [now|already] [make up|account for] [roughly|"
            "about] {pct} of [turnover|revenue] [for|at] [many|some] [independent|small] firms.",
            "[Apprentices|Trainees] [from|at] {Place} [College|technical college] [will|are to] "
            "[join|work with] the [company|team] [on|for] {n}-month [placements|contracts].",
            "[Suppliers|Wholesalers] [have|had] [raised|increased] [prices|charges] [twice|"
            "three times] [since|during] {yearprev}, [owners|managers] [say|said].",
            "[Late|Delayed] [payments|invoices] from [larger|big] [customers|clients] [remain|"
            "are] a [serious|persistent] [strain|headache] on [cash flow|small businesses].",
            "[The|A] [town|business] [improvement|development] [district|levy] [pays for|"
            "funds] [hanging baskets|street cleaning|Christmas lights] and [events|security].",
        ),
        quotes=(
            "[Every|Each] [empty shop|boarded-up window] [makes|tells] [people|shoppers] "
            "[think|believe] the town is [dying|in decline]",
            "[We|I] [would rather|prefer to] [train|grow] [our own|local] [people|staff] than "
            "[poach|hire] them from [elsewhere|competitors]",
            "[Margins|Profits] are [thin|tight], and [one|a single] [bad month|bad winter] "
            "[can|could] [finish|sink] a [small|family] business",
            "[Customers|Shoppers] [come back|return] [for|because of] [the people|the service], "
            "not [just|only] the [prices|products]",
            "[Banks|Lenders] [want|ask for] [three years|a long record] of accounts before they "
            "[lend|will talk to you], [which|and that] [rules out|shuts out] [start-ups|"
            "newcomers]",
            "[This|Our] town [has|still has] [something|a lot] [going for it|to offer], [if|as "
            "long as] we [stop|quit] [talking it down|complaining]",
        ),
        subjects=(
            Subject(
                slug="bakery-expansion",
                name="the family bakery's expansion",
                things=(
                    "the new bakehouse",
                    "the sourdough starter",
                    "the second shop on Bridge Street",
                    "the delivery bikes",
                ),
                facts=(
                    "The bakery, founded by the owner's grandmother after the war, is moving "
                    "its ovens to a larger bakehouse on the trading estate.",
                    "Its sourdough starter, said to be more than forty years old, travelled to "
                    "the new premises in a cool box on the passenger seat.",
                    "A second shop on Bridge Street will sell bread, pastries and coffee from "
                    "seven in the morning.",
                    "Bakers start work at three, and the firm is trialling a four-day week to "
                    "make the hours easier.",
                    "Unsold bread is collected each evening by a food bank and a pig farmer.",
                    "Deliveries to cafés within the town are made by cargo bikes rather than vans.",
                    "The owners borrowed from a community share offer that raised {money} from "
                    "{num} customers.",
                    "A deck oven bought secondhand from a closing hotel doubles the number of "
                    "loaves that can be baked at once.",
                ),
            ),
            Subject(
                slug="port-freight",
                name="the port's freight growth",
                things=(
                    "the container terminal",
                    "the new gantry crane",
                    "the rail freight link",
                    "the customs sheds",
                ),
                facts=(
                    "The port at {Place} handled a record number of containers last year, "
                    "driven by timber, animal feed and wind turbine parts.",
                    "A second-hand gantry crane bought from a northern European port was "
                    "shipped over in pieces and reassembled on the quay.",
                    "A reopened rail freight link takes about {n10} lorry loads a day off the "
                    "coast road.",
                    "Customs sheds built during the last trade dispute are being converted "
                    "into cold storage.",
                    "Dredging the channel to allow larger ships will start after the "
                    "birdwatching season on the estuary.",
                    "Dock workers secured a pay rise after a two-day stoppage in the spring.",
                    "Night-time lorry movements have angered residents of the terraced streets "
                    "near the dock gates.",
                    "The harbour board is owned by a trust rather than shareholders, and "
                    "profits are reinvested in the port.",
                ),
            ),
            Subject(
                slug="small-business-loans",
                name="the small business loan fund",
                things=(
                    "the microloans",
                    "the mentoring scheme",
                    "the application panel",
                    "the repayment holidays",
                ),
                facts=(
                    "The fund lends between $2,000 and $25,000 to firms with fewer than ten "
                    "employees that have been turned down by banks.",
                    "Each borrower is matched with a mentor from a retired business owners' "
                    "network for the first year.",
                    "The first round of microloans went to a bicycle repair shop, a "
                    "sign-painter and a Nepalese restaurant.",
                    "Applications are judged by a panel including a bank manager, a "
                    "councillor and two local traders.",
                    "Borrowers can take a three-month repayment holiday if a large customer "
                    "pays late.",
                    "Default rates in the pilot stayed below {n} percent.",
                    "The money comes from a charitable endowment left by a former mill owner.",
                    "Interest charged is lower than on most credit cards but higher than "
                    "a mortgage.",
                ),
            ),
            Subject(
                slug="housing-market",
                name="the local housing market",
                things=(
                    "the starter homes",
                    "the rental listings",
                    "the empty flats above shops",
                    "the new estate on the edge of town",
                ),
                facts=(
                    "House prices in {Place} have risen faster than wages for seven years "
                    "running, according to estate agents' figures.",
                    "The median home now costs more than nine times the median local salary.",
                    "Rental listings on the main property websites fell by a third as "
                    "landlords switched to holiday lets.",
                    "Dozens of flats above shops in the centre stand empty because owners "
                    "cannot afford the fire safety work to let them.",
                    "A new estate on the edge of town includes {n10} homes sold at a discount "
                    "to local first-time buyers.",
                    "Young teachers and nurses increasingly commute from cheaper towns along "
                    "the railway.",
                    "A community land trust is raising money to buy the old police station "
                    "and convert it into flats.",
                    "Mortgage brokers report that first-time buyers are taking loans over "
                    "thirty-five years to keep monthly payments down.",
                ),
            ),
        ),
    ),
    Topic(
        key="education",
        section="Education",
        orgs=("{Place} Academy Trust", "the {Place} Schools Partnership"),
        regulators=("the county education authority", "the schools inspectorate"),
        roles=(
            "head teacher at {Place} High School",
            "chief executive of {Org}",
            "the trust's director of learning",
        ),
        critics=(
            "a representative of the teachers' union",
            "the chair of the parents' association",
            "an education researcher at Stonebury University",
        ),
        headlines=(
            "[Pupils|Parents] in {Place} [welcome|react to] {subj}",
            "{Subj}: [lessons|a lesson] for schools across the county",
        ),
        ledes=(
            "[Pupils|Students] in {Place} [will|are set to] [benefit from|take part in] {subj} "
            "[from|starting in] {month}, {Org} [said|announced].",
            "{Subj} [has|had] [won|drawn] [praise|support] from [parents|teachers] [but|though] "
            "[questions|doubts] [remain|linger] [over|about] [funding|staffing].",
            "[Teachers|Staff] [at|across] {Org} [say|believe] {subj} [could|may] [make|mark] "
            "[a real|a lasting] difference [for|to] [children|pupils] [who|that] [struggle|"
            "fall behind].",
        ),
        body=(
            "[Class|Group] sizes [in|at] [some|several] [primary|secondary] schools [have|had] "
            "[reached|climbed to] {n10} [pupils|children].",
            "[Reading|Literacy] [scores|results] [at|by] age eleven [fell|dropped] [slightly|"
            "sharply] [after|following] the [pandemic|school closures].",
            "[Free school meal|Pupil premium] [funding|money] [pays|will pay] for [part|much] "
            "of {thing}.",
            "[Parents|Families] [can|are invited to] [visit|tour] the [school|classrooms] [on|"
            "during] an open [evening|morning] in {month}.",
            "[Teacher|Staff] [vacancies|shortages] [are|remain] [most|particularly] [acute|"
            "severe] in [maths|physics|languages].",
            "{Org2} [praised|noted] the [school's|trust's] [leadership|pastoral care] [in|at] "
            "its [latest|most recent] [report|visit].",
            "[Attendance|Punctuality] [has|had] [improved|risen] [by|to] {pct} [since|after] "
            "[breakfast clubs|morning clubs] [were|began to be] [introduced|offered].",
            "[Support|Teaching] [assistants|staff] [will|are to] [work|run sessions] with "
            "[small|smaller] [groups|classes] [during|in] [afternoons|lunch breaks].",
            "[Homework|Learning] [clubs|sessions] [run|held] [after school|in the library] "
            "[help|support] [pupils|children] [without|who lack] [quiet|a quiet] [space|place] "
            "to work at home.",
            "[Governors|Trustees] [will|are to] [review|assess] the [results|impact] [after|"
            "at the end of] the [first|summer] term.",
        ),
        quotes=(
            "[Children|Pupils] [only|] get one [childhood|chance at school], [and|so] [we|"
            "schools] [cannot|can't] [waste|squander] [a year|a term] of it",
            "[Good|Great] teachers are [the|our] [most precious|scarcest] [resource|thing], "
            "and we [need|have] to [keep|hold on to] them",
            "[When|If] a child [walks in|arrives] hungry, [nothing|no lesson] [else|] [sticks|"
            "goes in]",
            "[Parents|Families] [want|deserve] [to know|clarity about] [what|how] [their "
            "children|pupils] are [learning|taught] and why",
            "[Every|Each] [child|pupil] [can|will] [read|learn] [if|when] [we|you] [find|get] "
            "the [right|best] [way|approach] [in|for them]",
            "[This|It] is [not|no] [magic|miracle], [it is|just] [patient|careful] work [day "
            "after day|week after week]",
        ),
        subjects=(
            Subject(
                slug="school-library",
                name="the reopened school library",
                things=(
                    "the reading corner",
                    "the library catalogue",
                    "the author visits",
                    "the book swap shelves",
                ),
                facts=(
                    "The library at {Place} Primary had been used as a storage room for "
                    "broken furniture for almost five years.",
                    "Parents cleared it over three weekends and painted a mural of a whale "
                    "swallowing a bookshelf.",
                    "A local publisher donated {num} new books, and a bookshop raised more "
                    "through a sponsored read.",
                    "Year six pupils act as librarians at lunchtime, stamping books with an "
                    "old-fashioned date stamp.",
                    "A reading corner with beanbags is reserved for the youngest children on "
                    "Friday afternoons.",
                    "Book swap shelves by the gate let families exchange books they have "
                    "finished at home.",
                    "Two children's authors have agreed to visit this year to talk about "
                    "how they write.",
                    "Loans have quadrupled since the library reopened.",
                ),
            ),
            Subject(
                slug="coding-club",
                name="the after-school coding club",
                things=(
                    "the donated laptops",
                    "the robot kits",
                    "the game jam",
                    "the volunteer mentors",
                ),
                facts=(
                    "The club meets on Tuesday afternoons in the science block, where {n10} "
                    "pupils build games and program small robots.",
                    "A software company in {Place2} donated refurbished laptops with their "
                    "hard drives wiped.",
                    "Robot kits are shared between pairs, one child writing code while the "
                    "other tests it on the floor.",
                    "A weekend game jam produced a platform game about a hedgehog crossing the "
                    "ring road.",
                    "Volunteer mentors include a retired bank programmer and two university "
                    "students.",
                    "Girls now make up almost half the members after the club changed its "
                    "timing to avoid football practice.",
                    "Pupils learned to debug by hunting for mistakes planted deliberately in "
                    "each other's programs.",
                    "The club plans to enter a national competition for school-built apps.",
                ),
            ),
            Subject(
                slug="scholarship-fund",
                name="the university scholarship fund",
                things=(
                    "the bursaries",
                    "the accommodation grants",
                    "the interview coaching",
                    "the alumni mentors",
                ),
                facts=(
                    "The fund will pay tuition and living costs for {n} students a year from "
                    "families with no history of university study.",
                    "It was started with a bequest from a former pupil who became a marine "
                    "engineer.",
                    "Accommodation grants cover the deposit on student housing, often the "
                    "first hurdle for applicants.",
                    "Applicants receive interview coaching from alumni working in medicine, "
                    "law and engineering.",
                    "The first recipient is studying veterinary science after working weekends "
                    "on a dairy farm.",
                    "Recipients are asked to mentor a younger pupil once they graduate.",
                    "The school hopes to raise {money} more to make the fund permanent.",
                    "Letters from recipients are read out at the annual prize-giving.",
                ),
            ),
            Subject(
                slug="teacher-shortage",
                name="the teacher recruitment drive",
                things=(
                    "the relocation bonuses",
                    "the training salaries",
                    "the flexible timetables",
                    "the housing support",
                ),
                facts=(
                    "Schools in the district began the year with {n10} unfilled teaching posts, "
                    "mostly in maths and science.",
                    "Some physics lessons are being taught by biology specialists or by "
                    "supply staff on short contracts.",
                    "New recruits are offered relocation bonuses and help finding rented housing.",
                    "Career changers from industry can train while being paid a salary in "
                    "the classroom.",
                    "Flexible timetables let teachers with young children work four days a week.",
                    "Exit interviews found that workload, not pay, was the main reason "
                    "teachers left.",
                    "A teacher shared between two schools drives twenty miles between them "
                    "at lunchtime.",
                    "Head teachers have stopped most evening marking to reduce hours.",
                ),
            ),
        ),
    ),
    Topic(
        key="environment",
        section="Environment",
        orgs=("the {Place} Rivers Trust", "{Place} Wildlife Group"),
        regulators=("the environment agency", "the water company"),
        roles=(
            "conservation officer at {Org}",
            "director of {Org}",
            "an ecologist with {Org}",
        ),
        critics=(
            "a hydrologist at Marlbrook University",
            "a spokesperson for the landowners' association",
            "a member of the angling club",
        ),
        headlines=(
            "[Nature|Wildlife] [fightback|revival] [as|while] {subj} [takes root|gets under way] "
            "near {Place}",
            "[Volunteers|Ecologists] [hail|count the gains of] {subj} in {Place}",
        ),
        ledes=(
            "[Volunteers|Ecologists] [in|around] {Place} [say|believe] {subj} is [already|"
            "starting to] [bring|show] [results|signs of success].",
            "{Org} [launched|began] {subj} [this spring|last autumn] [with|after] [help|money] "
            "from {Org2}.",
            "[Birds|Insects|Fish] [are|have been] [returning|coming back] [to|along] [stretches|"
            "parts] of {Place} [thanks to|because of] {subj}, [surveys|counts] [suggest|show].",
        ),
        body=(
            "[Water|River] [quality|samples] [tests|taken] [upstream|downstream] [showed|found] "
            "[high|elevated] [levels|concentrations] of [phosphate|nitrate] [after|following] "
            "[heavy rain|storms].",
            "[Sewage|Storm] [overflows|discharges] [into|on] the [river|brook] were [recorded|"
            "logged] on {num} [occasions|days] [last year|in {yearprev}].",
            "[Volunteers|Members] [log|record] [what they find|their sightings] [on|through] a "
            "[shared|public] [app|map] [used by|open to] [scientists|researchers].",
            "[Invasive|Non-native] [plants|species] such as [Himalayan balsam|Japanese knotweed] "
            "are [pulled|cleared] [by hand|each summer] [along|from] the banks.",
            "{Org2} [has|had] [promised|pledged] {money} [for|toward] [improvements|upgrades] "
            "[at|to] the [treatment works|pumping station] [near|above] {Place}.",
            "[Landowners|Farmers] [along|beside] the [valley|river] [receive|are paid] "
            "[payments|grants] [for|to] [fence off|plant] [banks|buffer strips].",
            "[Schools|Pupils] [have|had] [adopted|taken on] [a stretch|sections] of {thing} "
            "[to|and] [monitor|survey] [each|every] [term|season].",
            "[Dog walkers|Visitors] are [asked|urged] to [keep|stay] [to|on] [paths|the "
            "boardwalk] [during|in] the [nesting|breeding] season.",
            "[Beavers|Otters] [were|have been] [spotted|filmed] [on|by] [trail|night] cameras "
            "[near|upstream of] {thing}.",
            "[Funding|Money] for [the next|a second] [phase|stage] [depends|rests] on [a|the] "
            "[grant|lottery bid] [due|to be decided] in {month}.",
        ),
        quotes=(
            "[Nature|Wildlife] [comes back|recovers] [faster than|more quickly than] [you|"
            "people] [think|expect] [if|when] you [give it|leave it] [room|space]",
            "[Every|Each] [bag|sack] of [rubbish|litter] we [pull out|remove] is one [less|"
            "fewer] [heading|going] [out to sea|downstream]",
            "[We|Our volunteers] [are not|are no] [experts|scientists], [just|only] [people|"
            "neighbours] who [love|care about] [this place|the valley]",
            "[You|We] [cannot|can't] [restore|repair] a river [one|a single] field at a time, "
            "[it|the work] has to [join up|connect]",
            "[Children|Kids] who [catch|find] their first [newt|dragonfly|stickleback] [never|"
            "don't] [forget|lose] [it|that excitement]",
            "[The data|The numbers] [do not|don't] lie, [and|but] [they|the trends] [take|need] "
            "years to [show|settle]",
        ),
        subjects=(
            Subject(
                slug="river-cleanup",
                name="the river clean-up",
                things=(
                    "the litter booms",
                    "the shopping trolleys in the river",
                    "the kayak patrols",
                    "the outfall pipes",
                ),
                facts=(
                    "Volunteers pulled {n10} shopping trolleys, a motorbike and a safe from "
                    "the river in a single weekend.",
                    "Floating litter booms below the town bridge catch plastic bottles before "
                    "they reach the weir.",
                    "Kayak patrols paddle the slow stretch behind the supermarket every "
                    "second Sunday.",
                    "Members photograph outfall pipes and report discoloured water to the "
                    "environment agency.",
                    "Most of the rubbish recovered is food packaging from the takeaway strip "
                    "on Water Lane.",
                    "The safe turned out to be empty, to the disappointment of the teenagers "
                    "who found it.",
                    "A scrap dealer collects the metal free of charge and donates the proceeds.",
                    "Kingfishers have been seen nesting in the bank opposite the boathouse.",
                ),
            ),
            Subject(
                slug="wetland-restoration",
                name="the wetland restoration",
                things=("the reed beds", "the new scrapes", "the bird hide", "the sluice gates"),
                facts=(
                    "The wetland covers {num} acres of former arable land that flooded most "
                    "winters anyway.",
                    "Diggers created shallow scrapes that hold water into early summer for "
                    "wading birds.",
                    "Reed beds planted by volunteers filter runoff from the fields before it "
                    "reaches the river.",
                    "Sluice gates let wardens control water levels to suit nesting lapwings.",
                    "A bird hide built from local larch faces west for evening light.",
                    "Bitterns were heard booming in the reeds for the first time in living memory.",
                    "The wetland is expected to store floodwater that used to pour into the "
                    "streets of lower {Place}.",
                    "Cattle graze the drier margins in late summer to keep scrub down.",
                ),
            ),
            Subject(
                slug="street-trees",
                name="the street tree planting programme",
                things=(
                    "the young lime trees",
                    "the watering bags",
                    "the tree pits",
                    "the shade map",
                ),
                facts=(
                    "The programme will plant {num} street trees over four winters, starting "
                    "in the neighbourhoods with the least shade.",
                    "A heat map drawn from satellite images showed parts of the Northside "
                    "estate several degrees warmer on summer afternoons.",
                    "Residents can adopt a tree and fill its watering bag during dry spells.",
                    "Tree pits are dug with special soil cells so roots do not lift the pavement.",
                    "Species were chosen to cope with hotter summers, including lime, hornbeam "
                    "and ginkgo.",
                    "Every tree has a tag with a number so that problems can be reported online.",
                    "Utility companies had to map pipes and cables before any digging began.",
                    "An older resident planted the first tree outside the house where she was "
                    "born.",
                ),
            ),
            Subject(
                slug="bird-migration-count",
                name="the autumn bird migration count",
                things=(
                    "the ringing station",
                    "the mist nets",
                    "the dawn counts",
                    "the estuary hide",
                ),
                facts=(
                    "Counters stationed on the headland tallied more than {num2} birds passing "
                    "south in a single October morning.",
                    "Swallows and house martins gather on the telephone wires before leaving "
                    "for Africa.",
                    "A ringing station fits tiny numbered rings to birds caught in fine mist "
                    "nets and released within minutes.",
                    "A reed warbler ringed here was recaptured two years later in Senegal.",
                    "Dawn counts start half an hour before sunrise, when movement is heaviest.",
                    "Thrushes arriving from Scandinavia can be heard calling overhead at night.",
                    "Numbers of some species have fallen by half since counts began in the 1980s.",
                    "The estuary hide is open to the public at weekends during the season.",
                ),
            ),
        ),
    ),
    Topic(
        key="technology",
        section="Technology",
        orgs=("{Place} Digital", "the {Place} Council IT department"),
        regulators=("the data protection regulator", "the national cyber security centre"),
        roles=(
            "chief technology officer at {Org}",
            "head of infrastructure at {Org}",
            "lead engineer at {Org}",
        ),
        critics=(
            "a privacy campaigner",
            "a computer science lecturer at Elmstead University",
            "an independent security researcher",
        ),
        headlines=(
            "{Subj} [puts|places] {Place} [on the tech map|in the spotlight]",
            "[Behind|Inside] {subj}: how {Place} [did it|got there]",
        ),
        ledes=(
            "{Org} has [completed|rolled out] {subj}, which [it says|officials say] "
            "[will|should] [save|spare] [money|time] [for|across] {Place}.",
            "{Subj} [has|had] [drawn|attracted] [attention|interest] [well beyond|far from] "
            "{Place} [since|after] [details|the code] [were|was] [published|released].",
            "[Engineers|Technicians] at {Org} [spent|worked] [months|much of the year] on "
            "{subj}, [now|which is now] [ready|in use].",
        ),
        body=(
            "[Legacy|Old] [systems|servers] [running|still running] [software from the "
            "1990s|decades-old software] [had|have] [become|grown] [costly|difficult] to "
            "[maintain|support].",
            "[Staff|Employees] [were|have been] [trained|taught] to [spot|recognise] "
            "[phishing|fraudulent] [emails|messages] [through|with] [regular|simulated] "
            "[tests|exercises].",
            "[Source|The] code [for|behind] {thing} [is|has been] [published|made available] "
            "[under|with] an open [licence|source licence].",
            "[Power|Electricity] [use|consumption] [by|from] {thing} [is|will be] [measured|"
            "monitored] [every|each] [minute|hour] and [published|shared] [online|openly].",
            "{Org2} [issued|published] [guidance|advice] [after|following] [similar|related] "
            "[incidents|problems] [elsewhere|at other councils].",
            "[Residents|Users] [without|lacking] [broadband|internet access] at home [can|may] "
            "[use|book] [computers|terminals] at the library.",
            "[Backups|Copies] of [critical|key] [data|records] [are|will be] [kept|stored] "
            "[offline|off-site] [in|at] a [separate|second] [location|building].",
            "[Contractors|Suppliers] [bidding|competing] for the [work|contract] had to [show|"
            "prove] [experience|a record] with [public|similar] [projects|sector clients].",
            "[Accessibility|Usability] [testing|trials] with [older|disabled] "
            "[residents|users] [led to|produced] [larger|clearer] [buttons|text].",
            "[The|A] [project|system] [was|has been] [designed|built] to [run|work] [on|with] "
            "[modest|ordinary] hardware [rather than|instead of] [costly|expensive] [cloud|"
            "specialist] [services|equipment].",
        ),
        quotes=(
            "[Technology|Software] [should|must] [serve|work for] [people|residents], not the "
            "other way round",
            "[Nobody|No one] [notices|thinks about] [infrastructure|the plumbing] [until|"
            "unless] it [breaks|fails]",
            "[The|Our] [best|strongest] [defence|protection] is [staff|people] who [feel|are] "
            "[able|safe] to [report|admit] a mistake",
            "[We|I] [would rather|prefer to] [publish|share] our code and [be|get] [corrected|"
            "criticised] than [hide|keep] it",
            "[Boring|Simple] [technology|systems] that [works|keep working] [beats|is better "
            "than] [clever|exciting] [technology|systems] that [doesn't|fail]",
            "[Data|Information] about [residents|people] [belongs|is entrusted] to [them|us], "
            "and we [treat|handle] it [that way|accordingly]",
        ),
        subjects=(
            Subject(
                slug="data-centre-heat",
                name="the data centre heat recovery scheme",
                things=(
                    "the server halls",
                    "the heat exchangers",
                    "the swimming pool pipework",
                    "the liquid cooling loops",
                ),
                facts=(
                    "Waste heat from the server halls is piped across the road to warm the "
                    "public swimming pool.",
                    "Heat exchangers in the basement capture warm water from liquid cooling "
                    "loops fitted to the newest servers.",
                    "The pool's gas boilers now run only on the coldest days of the year.",
                    "The pipework runs under the road through a duct laid when the street "
                    "was resurfaced.",
                    "Engineers expect to recover about {pct} of the electricity the halls use "
                    "as usable heat.",
                    "A second phase would heat {n10} flats in the new development next door.",
                    "The data centre hosts records for hospitals and banks, so the heat link "
                    "had to pass strict security reviews.",
                    "Swimmers have joked that their lengths are now powered by cat videos.",
                ),
            ),
            Subject(
                slug="open-source-library",
                name="the council's open-source planning tool",
                things=(
                    "the planning map",
                    "the code repository",
                    "the bug reports",
                    "the volunteer contributors",
                ),
                facts=(
                    "The tool shows every planning application in the district on a map, "
                    "with documents attached and comment deadlines.",
                    "The council released the code so that other authorities can reuse it "
                    "instead of paying for licences.",
                    "Within a month, {n10} outside contributors had fixed bugs or translated "
                    "the interface.",
                    "A student in another country added support for screen readers.",
                    "Three neighbouring councils have installed it on their own servers.",
                    "Bug reports are triaged every Monday by two developers on the council's "
                    "staff.",
                    "The previous supplier's contract cost {money} over five years.",
                    "A public roadmap lets residents vote on which feature is built next.",
                ),
            ),
            Subject(
                slug="municipal-wifi",
                name="the free town centre wifi",
                things=(
                    "the wireless access points",
                    "the lamppost antennas",
                    "the usage figures",
                    "the sign-in page",
                ),
                facts=(
                    "Free wifi now covers the market square, the bus station and the length "
                    "of the high street.",
                    "Access points are mounted on lampposts and on the roof of the town hall.",
                    "Users do not have to hand over an email address, only accept the terms "
                    "on a sign-in page.",
                    "Anonymous usage figures show peaks on market days and during football "
                    "matches.",
                    "Traders use the network to take card payments at stalls where mobile "
                    "signal is weak.",
                    "Engineers cut connections briefly during a lightning storm that fried "
                    "two antennas.",
                    "Content filters block malware sites but not news or social media.",
                    "The network cost far less than expected because it reused fibre laid "
                    "for traffic cameras.",
                ),
            ),
            Subject(
                slug="council-cyber-attack",
                name="the recovery from the council cyber attack",
                things=(
                    "the encrypted file servers",
                    "the offline backups",
                    "the temporary paper forms",
                    "the forensic investigation",
                ),
                facts=(
                    "Criminals encrypted the council's file servers in {month}, knocking out "
                    "payments, planning and housing systems.",
                    "The council refused to pay the ransom and rebuilt systems from offline "
                    "backups.",
                    "For three weeks housing officers went back to paper forms and carbon copies.",
                    "A forensic investigation found the attackers entered through an old "
                    "remote access account that should have been closed.",
                    "Residents were warned to watch for scam messages pretending to be from "
                    "the council.",
                    "Benefit payments were made on time after staff worked through a weekend "
                    "to process them by hand.",
                    "Every staff account now requires a second sign-in step from a phone app.",
                    "The full cost of the recovery is still being counted.",
                ),
            ),
        ),
    ),
    Topic(
        key="culture",
        section="Culture and Sport",
        orgs=("the {Place} Arts Trust", "{Place} Athletic Club"),
        regulators=("the regional arts council", "the county sports partnership"),
        roles=(
            "artistic director of {Org}",
            "chair of {Org}",
            "chief organiser at {Org}",
        ),
        critics=(
            "a theatre critic",
            "a local historian",
            "a resident who lives beside the venue",
        ),
        headlines=(
            "[Crowds|Audiences] [flock to|turn out for] {subj} in {Place}",
            "{Subj} [brings|gives] {Place} [a weekend to remember|something to cheer]",
        ),
        ledes=(
            "[Thousands|Hundreds] of [visitors|spectators] [are expected|will arrive] in {Place} "
            "[for|this weekend for] {subj}, [organisers|{Org}] [said|say].",
            "{Subj} [returned|is back] [to|in] {Place} [this year|after a break], [bigger|"
            "busier] than [ever|before].",
            "[Organisers|Volunteers] [behind|running] {subj} [spent|have spent] [months|the "
            "winter] [preparing|planning] [for|ahead of] [opening day|the big weekend].",
        ),
        body=(
            "[Tickets|Passes] sold out [within hours|in two days] [of going on sale|of their "
            "release], [and|with] [a waiting list|a returns queue] [opening|offered] [soon after|"
            "online].",
            "[Volunteers|Stewards] [in|wearing] [orange|green] [vests|jackets] [will|are to] "
            "[direct|guide] [visitors|crowds] from the [station|car parks].",
            "[Hotels|Guest houses] [and|as well as] [cafés|pubs] [reported|expected] [their "
            "busiest|a bumper] [weekend|week] [of the year|since the summer].",
            "[Road closures|Diversions] [will|are to] [be in place|apply] [from|between] "
            "[early morning|dawn] [until|and] [mid-afternoon|late evening].",
            "{Org2} [provided|awarded] [a grant|funding] of {money} [toward|for] [the event|"
            "this year's programme].",
            "[Local|Young] [performers|competitors] [were|have been] [given|offered] [free|"
            "reduced] [places|entry] [to|in order to] [encourage|widen] [participation|"
            "involvement].",
            "[Accessible|Quiet] [viewing|seating] [areas|spaces] [were|have been] [set aside|"
            "arranged] [for|near] {thing}.",
            "[Litter|Recycling] [teams|volunteers] [will|plan to] [sweep|clear] the [streets|"
            "park] [by|before] [nightfall|the next morning].",
            "[Photographs|Recordings] [from|of] [earlier|previous] [years|editions] [are|will "
            "be] [shown|displayed] in the [library|town hall] [foyer|window].",
            "[Sponsors|Local firms] [include|range from] [a brewery|an estate agent|a garden "
            "centre] [and|to] [the building society|a family-run garage].",
        ),
        quotes=(
            "[This|It] is [the|one] weekend [when|where] the [whole|entire] town [comes|gets] "
            "together",
            "[You|We] [do not|don't] [need|have] to be [an expert|a professional] to [enjoy|"
            "love] it, [just|only] [curious|willing to try]",
            "[Culture|The arts] [is|are] not a [luxury|frill], [it is|they are] [part of|what "
            "makes] [a|the] [place worth living in|town worth staying in]",
            "[The|Our] volunteers are [the|its] [heart|backbone] of [everything|the whole thing]",
            "[I|We] [came|first came] [as|when I was] a [child|teenager] and now [bring|I bring] "
            "my [own|] [children|grandchildren]",
            "[Noise|Parking] [is|remains] [a problem|an issue] [for|on] [our|my] street [every|"
            "each] year, [whatever|no matter what] [they|the organisers] [promise|say]",
        ),
        subjects=(
            Subject(
                slug="marathon",
                name="the valley marathon",
                things=(
                    "the start line on the promenade",
                    "the water stations",
                    "the finish straight",
                    "the wheelchair race",
                ),
                facts=(
                    "More than {num2} runners will start on the promenade and finish in front "
                    "of the town hall.",
                    "The course climbs through the old quarter before a long, flat run along "
                    "the canal towpath.",
                    "Water stations every five kilometres are staffed by scouts and the "
                    "rowing club.",
                    "A separate wheelchair race starts ten minutes ahead of the main field.",
                    "Last year's winner, a postwoman, finished in just over two hours and "
                    "thirty minutes.",
                    "Runners raised money for the hospice and the mountain rescue team.",
                    "Bands play on street corners along the route to keep tired runners going.",
                    "Medals are cast from recycled metal salvaged from old railway lines.",
                ),
            ),
            Subject(
                slug="museum-exhibition",
                name="the museum's textile exhibition",
                things=(
                    "the pattern books",
                    "the restored loom",
                    "the oral history recordings",
                    "the gallery lighting",
                ),
                facts=(
                    "The exhibition traces two centuries of weaving in the valley, when the "
                    "mills employed half the town.",
                    "A restored loom is worked twice a day by a former weaver who started at "
                    "the mill aged fifteen.",
                    "Pattern books with swatches of cloth were found in a skip when the last "
                    "mill was converted into flats.",
                    "Visitors can listen to oral history recordings of mill workers describing "
                    "strikes, dances and accidents.",
                    "Lighting in the gallery is kept low to stop the dyes from fading.",
                    "Schoolchildren have designed their own patterns inspired by the books.",
                    "The museum borrowed a wedding dress woven from local cloth in 1923.",
                    "Entry is free, with donations going to the conservation workshop.",
                ),
            ),
            Subject(
                slug="jazz-festival",
                name="the riverside jazz festival",
                things=(
                    "the floating stage",
                    "the late-night jam sessions",
                    "the youth big band",
                    "the marquee on the green",
                ),
                facts=(
                    "A floating stage moored by the bridge hosts the headline concerts, with "
                    "audiences on both banks.",
                    "Late-night jam sessions in the pubs are open to any musician who brings "
                    "an instrument.",
                    "The youth big band rehearsed all spring for its first appearance on the "
                    "main stage.",
                    "A marquee on the green holds workshops on improvisation and swing dance.",
                    "The festival began as a single concert in a church hall in the 1970s.",
                    "A pianist from New Orleans will play a solo set on Sunday afternoon.",
                    "Boats on the river are asked to pass the stage slowly during performances.",
                    "Wristbands give access to every venue for the whole weekend.",
                ),
            ),
            Subject(
                slug="chess-tournament",
                name="the open chess tournament",
                things=(
                    "the demonstration boards",
                    "the junior section",
                    "the blitz evening",
                    "the tournament clocks",
                ),
                facts=(
                    "Nearly {num} players, from eight-year-olds to a grandmaster, entered the "
                    "open tournament in the town hall.",
                    "Games from the top boards are shown on large demonstration boards "
                    "updated move by move.",
                    "The junior section runs on the Saturday so that children can play "
                    "without missing school.",
                    "A blitz evening, with five minutes per player, drew a noisy crowd to the "
                    "upstairs bar.",
                    "Digital clocks were borrowed from a club in {Place2}.",
                    "The tournament's oldest entrant learned to play in a hospital ward "
                    "seventy years ago.",
                    "A strict silence rule in the playing hall is enforced by a retired "
                    "headmistress.",
                    "Prize money comes from the estate of a former club champion.",
                ),
            ),
        ),
    ),
)
