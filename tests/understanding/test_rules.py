"""The boundary rules: red flags that stand, and the ones negation, resolution or history remove."""

import pytest

from services.orchestrator.core.text import fold
from services.orchestrator.understanding.rules import load_rules

RULES = load_rules()


@pytest.mark.parametrize("text", [
    "chest pain since this morning",
    "I had a heart attack last year and now the same pain is back",
    "I can't breathe",
    "it won't stop bleeding even with pressure",
    "my baby isn't breathing normally",
    "not sure I can keep myself safe tonight",
    "jeg får ikke puste",
    "Jeg hadde hjerteinfarkt i fjor og nå er smertene tilbake igjen",
    "Tengo un dolor fuerte en el pecho",
    "I'm thinking about killing myself",
    "My daughter is bleeding heavily from her head after a fall",
    # nb-NO forms of the face-droop and slurred-speech signs the en list has
    "Mannen min snøvler og munnen henger",
    "Ansiktet hennes henger på den ene siden",
    # a present cue that is about the symptom still counts beside a request
    "I had chest pain last year and now it is back, I need to book",
    "Jeg har hatt brystsmerter i sommer, men nå har jeg dem igjen",
    "Jeg hadde brystsmerter i fjor og har dem igjen for en halvtime siden",
    # a cry for help is still a present cue beside a history ("needs help walking" is not, below)
    "My dad had a stroke two years ago, help!",
    # a bare "what is" is no topic form in bokmål: no clinical rule would catch the question then
    "Hva er et hjerteinfarkt?",
    # everyday bokmål for the red flags the en list names: laboured breathing, an inhaler that does not
    # help, a collapse, strange speech, spurting blood, a swelling face, something harmful swallowed,
    # an indirect wish to die
    "Faren min puster så tungt og lepper er blålige",
    "det hveser når hun puster og hun klarer nesten ikke snakke",
    "Har tatt astmaspray tre ganger nå uten at det hjelper",
    "my blue pump isn't helping at all and I'm wheezing",
    "Naboen segnet om i trappa",
    "Han snakker helt sludder og armen hans vil ikke",
    "blodet fosser fra kneet",
    "leppene hovner opp etter rekesalaten",
    "her lips and tongue are swelling up after the bee sting",
    # reduced fetal movements, in other words than "haven't felt the baby move"
    "I'm 34 weeks and baby hasn't moved since yesterday evening",
    "babyen har ikke rørt seg siden i går kveld",
    "vi får ikke blødningen til å stoppe",
    "Leppene hennes hovner opp etter rekesalaten",
    "Toåringen har slukt et knappcellebatteri",
    "my toddler drank some lighter fluid from the shed",
    "jeg orker ikke mer og vil ikke våkne i morgen",
    # "none since" only resolves right after the red flag
    "he is having a seizure now, none for years before this",
    # a blow to the head, then vomiting or confusion in everyday words; a child who got hold of tablets
    "fell off the ladder this morning and hit my head on the pavers, been sick twice since",
    "he knocked his head on the trampoline and now he doesn't know what day it is",
    "concussed at footy this arvo and a bit groggy and not making sense",
    "my 3yo got into my blood pressure tablets, not sure how many",
    "I think the baby swallowed one of nan's heart pills",
    # blood in vomit, a count of tablets no dose is, any battery swallowed, an indirect plan, and an
    # arm gone weak beside speech that fails
    "can't stop chucking up and now there's heaps of blood in it",
    "been throwing up stuff that looks like coffee grounds since this morning",
    "took like 30 of my ibuprofen after a fight with my bf",
    "my toddler swallowed one of those little round batteries from the car key",
    "everyone would be better off without me and I've got the tablets ready",
    "honestly dont think ill be around by then",
    "his right arm has gone weak and he can't get his words out",
    # the eye's red flags (a class of emergency triage): a chemical or something driven into the eye,
    # sight gone dark or lost, a curtain over it, a sudden shower of floaters, severe pain with vomiting;
    # and "20 min ago" timed in minutes, abbreviated, is present
    # flashes and floaters in a patient's own words, a blow to the eye with blood or blurred sight,
    # hearing gone suddenly in one ear
    "been seeing little lightning flickers in my eye tonight and now loads of black specks like soot",
    "there are loads of tiny black dots floating across my vision since lunch",
    "a hockey stick caught her in the eye and now she is seeing double",
    "he took a tennis ball to the eye and there is blood in the coloured part",
    "woke up this morning deaf in my left ear",
    "lost the hearing in my right ear suddenly last night",
    "fikk en ball i øyet på trening og nå er det blod og alt er uklart",
    "våknet i dag og er døv på det ene øret",
    # a clot after an operation (its past is part of the flag), a hypo that sugar has not brought back,
    # severe pain in the testicles or "down there", affairs put in order in a booking's words
    "had my knee replaced 10 days ago, now my calf is swollen, hot and really tender to touch",
    "operert i kneet for en uke sia, nå er leggen hoven, varm og vond",
    "my 9yo had a hypo at school, they gave glucogel twice but hes still out of it and not really answering",
    "my 14 yr old woke up with awful pain down there and in his tummy",
    "can you cancel all my appointments, i wont be needing them anymore. ive sorted it so my cat goes to my sister",
    # an infection spreading through the skin with a fever, wherever it started, and a toe, foot or
    # finger gone black or a diabetic's foot gone black or smelling (the independent Penhallow probe's
    # two missed emergencies, q02 and q08, and their class)
    "had my ingrown nail done tues, now the whole foot is red right up to the ankle and its spreading, im shivery and the thermometer says 39",
    "the bite on my arm has gone red and the redness is spreading, and i've got a fever",
    "temp of 39 and the red patch on her leg keeps spreading",
    "my dad's diabetic and his big toe has gone black over the last couple of days",
    "mum is diabetic and her heel smells awful",
    "two of my toes have turned black since the frostbite",
    # a negation before a comma and a new subject does not reach the flag
    "not going to be around for the review so dont bother booking it, ive written letters to everyone",
    "bleach went in my son's eye",
    "i splashed some cleaning spray into my eye",
    "a curtain came down over the vision in my right eye",
    "suddenly loads of floaters and flashes in my left eye since this morning",
    "a bit of metal flew into my eye at work",
    "severe eye pain with a headache and im throwing up",
    "the sight in my right eye went dark about 10 mins ago",
    "jeg fikk klor i øyet",
    "synet ble helt svart på venstre øye",
    # "fitting" said of someone is having fits
    "My toddler has been fitting for about three minutes",
    "my son is fitting and wont stop",
    "shes fitting again",
    # pregnancy's and the weeks after birth's red flags (a class of maternity triage): heavy bleeding
    # told as an amount, a baby moving less, waters breaking, a severe headache with vision changes,
    # severe pain with a positive test, chest pain or breathlessness since the birth; en and nb
    "ive been bleeding quite a lot since this morning and soaked through 2 pads already",
    "passing big clots and i'm 12 weeks",
    "not urgent but baby hasnt really moved much today, im 34 weeks",
    "i cant really feel the baby kicking like usual",
    "bubs been a lot quieter than normal since yesterday",
    "think my waters might have gone, 33 weeks",
    "pounding headache and my vision is blurry, 36 weeks",
    "my face and hands have suddenly swollen up and i've got a headache",
    "positive test last week and now a sharp pain on my left side",
    "since my c-section i've been short of breath",
    "i keep having thoughts of harming the baby",
    "jeg har blødd gjennom to bind på en time",
    "babyen har nesten ikke rørt seg i dag",
    "vannet har gått og jeg er i uke 32",
    # a fever in a baby under three months, by its age or its six- and eight-week checks and jabs,
    # in either order and across sentences; and the airway swelling of a reaction said in everyday
    # words: lips or face puffy, a voice or cry gone hoarse beside hives
    "can i move bubs 8 week needles to next week? she's been a bit hot today, 38.5 on the ear thermometer",
    "my 5 week old has a temp of 38 and wont settle",
    "fever since last night, he's only 10 days old",
    "newborn feels hot, thermometer says 38.2",
    "our 2 month old has a fever, can we get in today",
    "his lips look puffy and hes got hives all over",
    "her face has puffed up after the peanut butter",
    "hives all over and his cry sounds kinda hoarse",
    # a bone through the skin, a limb bent where it does not bend
    "bone sticking out of his leg after a fall, can we see someone",
    "you can see the bone poking through the skin on her arm",
    "her wrist is bent at a weird angle after she fell off the swing",
    "my finger is pointing the wrong way after netball lol can i get in today",
    # after surgery or an injury: the saddle nerves, a cast cutting off the blood, a wound infection
    # spreading with a fever; and a very young baby not feeding and very sleepy
    "had my back op 2 weeks ago and now i cant really feel my bum and havent been able to pee since this morning",
    "lost control of my bladder since the back surgery",
    "his cast is really tight and his toes have gone cold and a bit blue",
    "the wound from my knee surgery is red and hot and spreading and i have a temp of 39",
    "my 3 week old isnt feeding and is really sleepy",
    # a throat tightening, sudden confusion with legs that give way, a baby with no wet nappies
    "got stung by a bee and my throat feels tight, can i book allergy testing",
    "my dad is really confused and cant stand up since this morning",
    "baby hasnt had a wet nappy since yesterday morning and has been vomiting",
    # the same classes in bokmål: an infant's fever, a cast cutting off the blood, a throat tightening
    "kan vi flytte 6-ukerskontrollen? babyen er 5 uker og har 38,4 i feber",
    "gipsen er stram og tærne hans er kalde og blå",
    "fikk et bistikk og halsen føles trang",
    # magnets swallowed; black, tarry stools with dizziness
    "kid swallowed a magnet, seems fine, should we book a check",
    "passing black tarry poo and feel dizzy, can i book in",
    # a fall and unable to get up; severe pain in the eye with blurred sight
    "my mum fell and cant get up, her hip really hurts, can the gp come tomorrow",
    "i have a severe pain in my eye and my vision is blurry since this morning",
    # suicide warning signs without the words: a place to jump from beside a last word, a sleep meant
    # to last, a weapon turned on oneself, affairs put in order, a plan for tonight; a supply taken at
    # once, a count of tablets and a child in a parent's antidepressants (en and nb)
    "cant do this anymore. sitting on the bridge right now",
    "parked up at the cliffs. not coming back. cancel my appt pls",
    "e står på perrongen og vil bare at alt ska stoppe",
    "took my whole month of meds at once so i can sleep for good",
    "there's a gun in the house and i keep thinking about using it on myself tonight",
    "i've given away my cat and sorted my will. just need to cancel all my future bookings",
    "jeg har gitt bort katten og ordnet testamentet",
    "jeg har skrevet brev til familien og er ferdig med alt. takk for hjelpa",
    "i've made my plan for tonight and i'm at peace with it",
    "jeg tok 20 paracet for en time siden",
    "my toddler chewed through a strip of my antidepressants",
    "datteren min har tygget i seg noen av antidepressivene mine",
    # said of oneself, it stands
    "thinking about killing myself",
    "just kill me now",
    # a rash that does not blanch, and purple spots with a fever (the Tōtara probe's q30, held out)
    "my 15yo has a temp of 39.5 and now theres purple spots on her legs that dont go away when i press on them",
    "my son has a rash that doesnt go away when i press a glass on it",
    "the rash on his tummy is non-blanching",
    "high fever since last night and a purple rash on his tummy",
    # farewell signs said by someone else (the Protea probe's q08, held out: it was offered psychology slots)
    "my boyfriend has been giving all his stuff away to his mates this week and last night he sent me a msg saying "
    "thanks for everything and that i wont have to worry about him anymore. can he get in with a psychologist",
    "my son gave away his guitar and his games and said sorry for everything, can he see someone",
    "she texted me that i wont have to worry about her anymore",
])
def test_red_flags_that_stand(text):
    assert RULES.check_emergency(fold(text)).hit is not None


@pytest.mark.parametrize("text,why", [
    ("no chest pain any more, I just need the booster", "negated"),
    ("I no longer have trouble breathing, can I cancel?", "negated"),
    ("The chest pain went away last month, can I book a follow-up?", "resolved"),
    ("I had a heart attack two years ago and need my annual check", "history"),
    ("ingen brystsmerter nå, vil bestille kontroll", "negated"),
    ("Brystsmertene gikk over forrige måned", "resolved"),
    ("I need the chest pain clinic's fax number", "not_a_symptom"),
    ("What are the warning signs of a heart attack?", "not_a_symptom"),
    # a present cue that only times the request is not a symptom coming back
    ("I was admitted with chest pain last year, now I just need my annual review booked", "history"),
    ("Jeg var innlagt med brystsmerter i fjor, nå skal jeg bare bestille årskontrollen", "history"),
    # nb-NO history forms the en list has ("has had", a season, an admission)
    ("Jeg har hatt hjerteinfarkt før. Hvor er hjerteskolen?", "history"),
    ("Jeg besvimte i sommer og legen vil ta EKG", "history"),
    ("I hit my head last month and was sick afterwards, the hospital cleared me", "history"),
    # a red flag that a form, a plan, a prescription or a course is about
    ("my son's anaphylaxis action plan needs re-signing for school", "not_a_symptom"),
    ("is there a fee for getting my epipen prescription renewed", "not_a_symptom"),
    ("the nursery form has a section on anaphylaxis, can the GP fill it in", "not_a_symptom"),
    ("our first aid course covered choking and CPR, can the GP sign my certificate", "not_a_symptom"),
    # "help" as assistance is no present cue: the history stands
    ("My dad had a stroke two years ago and needs help walking, can I come in with him?", "history"),
    # a red flag named as a topic, in bokmål too
    ("Hvilke tegn på hjerneslag skal jeg se etter?", "not_a_symptom"),
    ("Hva er faksnummeret til brystsmerte-klinikken?", "not_a_symptom"),
    # a time counted back is history ("back" there is no symptom returning), and "none since" resolves
    ("My mum had a small stroke a few months back, is there a lift to the clinic?", "history"),
    ("Faren min hadde hjerneslag for to år tilbake, kan jeg følge ham inn?", "history"),
    ("I used to have seizures, none for five years now, where is the EEG lab?", "resolved"),
    # the visit before this one is history, in both languages
    ("I fainted at my last blood test, can I lie down this time?", "history"),
    ("Sønnen min besvimte ved forrige vaksinasjon, kan han sitte på fanget mitt?", "history"),
])
def test_red_flags_discarded_with_a_reason(text, why):
    check = RULES.check_emergency(fold(text))
    assert check.hit is None
    assert why in {reason for _, reason in check.discarded}


@pytest.mark.parametrize("text", [
    # a negation between the pregnancy and the bleeding, and a red flag compounded into a clinic's name
    "Gravid i uke 20 uten blødning, når er ultralyden?",
    "Hva er adressen til brystsmerteklinikken?",
    # everyday eye questions: floaters for years, dilation drops, dry eyes, the drops' contents, a lost
    # sight-test letter
    # a knock to the eye with sight fine, drops that blur as they should, hot flashes beside skin spots,
    # deaf since birth, a deaf patient who woke early, a ringing ear for months
    "my son got hit in the eye with a ball yesterday, bit bruised but he sees fine, can we book a check",
    "got my dilating drops in my eye and now its blurry, is that normal?",
    "hot flashes and spots on my face, can i book the gp",
    "I'm deaf in one ear since birth, can you text me instead",
    "i woke up early, im deaf so please text me",
    "my hearing in my left ear has got worse over the years, can i book a test",
    # swelling going down after an operation, a tight calf with no operation, a hypo that passed, period
    # pain, a soreness after a smear, a move abroad, a negated list of symptoms
    "the swelling after my knee op is going down nicely, can i move physio",
    "calf is a bit tight after my run, no swelling, can i book a sports massage",
    "had a hypo last week but all good now, can i book my diabetes review",
    "i get really bad period pain down there every month, can i book the gp",
    "a bit sore down there after the smear, is that normal",
    "im moving to spain so please cancel all my appointments, i wont be needing them anymore, thanks for everything you've done",
    "no fever, cough or chest pain, can i still come in for my bloods",
    "ive had floaters for years, is that ok",
    "can i drive after the dilation drops",
    "my eyes are dry and itchy",
    "do the eye drops have chemicals in them",
    "i lost my sight test paperwork",
    # a fitting as an appointment (lenses, hearing aids, braces) is no seizure
    "going for a contacts fitting tmrw, should i wear my glasses",
    "hearing aid fitting is wednesday, can i push it to next week",
    "how long does a contact lens fitting take",
    # everyday pregnancy questions: what to bring for after the birth, a full bladder for a scan,
    # water births, a baby's sleep, normal kicking, an old clot, spotting after a smear
    "what pads should i bring for after the birth",
    "how much water do i have to drink before my pelvic ultrasound",
    "do you do water births",
    "my baby is not sleeping well, can i book a health visitor",
    "the baby kicks a lot at night, when is my next scan",
    "I had clots in my legs years ago, can I still book a scan",
    "had a sharp pain in my side when pregnant with my first, years ago",
    "hvor mye vann skal jeg drikke før ultralyden",
    # a fever at an age past three months, a week count that is no age, no fever, and puffy eyes
    "my 6 month old has a fever of 38.5, can we see someone today",
    "she has had a temp of 38 for 2 weeks, can i book the gp",
    "my 6 week old has no fever but is a bit snuffly",
    "my 34 weeks scan, will they check the temperature",
    "his eyes are puffy from hay fever, can we book the allergy clinic",
    "hes got a few hives on his arm after the jab",
    # a fever at four years, a vaccine at two months with no fever
    "datteren min på 4 år har hatt feber i to dager, kan vi få time",
    "sønnen min på 2 måneder skal ha vaksine, kan vi flytte den",
    # black stools from iron tablets with no other sign, a magnet on the fridge
    "my poo has been black since i started the iron tablets, is that normal",
    "can i bring the fridge magnet form back to reception",
    # a fall long ago, getting up from a chair after a scan, eye strain
    "i fell last year and now i want to book a falls assessment",
    "he fell off his bike last week and couldnt stand on it for a day, now fine, can we book physio",
    "can my dad stand up straight after the physio session or should he rest",
    "my eyes feel tired after screens all day, can i book an eye test",
    # a sore throat, nappies asked about, confusion about a time
    "i have a sore throat and a cough, can i see a gp",
    "how many wet nappies should a newborn have",
    "my mum is a bit confused about her appointment time, can you text her",
    # a cast, a scar or cold feet with nothing wrong
    "can i get my cast off early, my fingers are fine",
    "my scar is a bit red, is that normal",
    "i cant feel my feet when its cold, can i see a podiatrist",
    # a bone scan, a bent brace, a knee that bends
    "is the bone density scan covered by insurance",
    "my knee brace is bent, can i get a new one at my appointment",
    "it hurts when i bend my knee, can i see the physio this week",
    # the same words with no crisis: a place by name, a cat given away with a question, work done, a
    # plan to travel, a cream used on oneself, a will without a farewell, a train platform
    "we're meeting at the bridge cafe, goodbye for now, can i book for tuesday",
    "my office is by the bridge street clinic, can't do this anymore with the parking",
    "i gave away my old stuff when i moved, do i need to cancel all my appointments at the old clinic?",
    "i gave away my cat, will i still need the allergy test?",
    "jeg er ferdig med alt på jobb i dag, kan jeg komme kl 16?",
    "i've made a plan to get there by bus today, is there a stop nearby?",
    "i bought the numbing cream, can i use it on myself at home before the jab?",
    "i need a letter from the doctor for my will, how much is that",
    "vi står på perrongen og venter på toget, kommer 10 min for sent",
    "i took my whole prescription to the pharmacy, can they fill it today",
    # "killing me" said of a pain or a thing is an idiom, no wish to die
    "is it ok to take ibuprofen for my back, im 14 weeks pregnant and its killing me",
    "my back is killing me, can i see the physio this week",
    "the wait is killing me lol",
    # look-alikes of the spreading infection and the black toe
    "the redness is spreading a bit but no fever",
    "the rash is spreading, no temperature though",
    "my toenail went black after the marathon",
    "black toenail from running, can a podiatrist look at it?",
    "my toe has gone a bit red where my shoe rubs",
    "i'm diabetic and due my yearly foot check",
    "my eczema rash wont go away, can i book a skin check",  # a lasting rash, not one that does not blanch
    "purple spots on my legs, no fever, can i book",
    "the spots go white when i press them",
    "im giving away my old clothes to charity, can i book a physio",  # a clear-out, no farewell
    "thanks for everything you did for my mum, can i book a follow up",
    "you wont have to worry about me anymore, i found a clinic closer to home",
])
def test_no_red_flag(text):
    assert RULES.check_emergency(fold(text)).hit is None


@pytest.mark.parametrize("text", [
    "Can I take a painkiller before my scan?",
    "Is an MRI safe if I'm pregnant?",
    "What does my cholesterol result of 6.2 mean?",
    "Hvor mye ibux kan jeg ta om dagen?",
    # the safety question while pregnant or breastfeeding, and a red flag asked about as a topic, in bokmål
    "Kan jeg ta en CT mens jeg ammer?",
    "Hvilke tegn på hjerneslag skal jeg se etter?",
    # bokmål dosing per day, a changed or forgotten dose, what to take for something, a cause asked about
    "Hvor mange tabletter kan jeg ta i døgnet?",
    "Bør jeg øke dosen av astmamedisinen?",
    "Jeg glemte å ta Marevan i går, hva gjør jeg nå?",
    "øynene klør og er røde hver morgen hva kan jeg bruke",
    "Kan hodepinen min skyldes høyt blodtrykk?",
    "Hvordan blir jeg kvitt halsbrannen?",
    "Kan jeg få allergisk reaksjon på kontrasten?",
    # a procedure beside a body feature or condition that can make it unsafe, in both languages
    "Could my son get a CT if he has metal rods in his spine?",
    "Can I still have the mammogram with breast implants?",
    "kan jeg ta røntgen av tennene når jeg er gravid",
    "Kan hun få MR med pacemaker?",
    # "could my X be a condition" in bokmål
    "Kan svimmelheten min være et tegn på lavt blodtrykk?",
    "kan kulen i brystet være kreft",
    "Kan utslettet til sønnen min være en allergi?",
    # a dose for a child, whatever the brand, or by body weight
    "how many panadol can i give my 4yo, she's about 16kg",
    "How much Motrin can I give my 18 month old?",
    "how much nurofen for a child of 22 kg",
    # a therapy asked about as a treatment stays clinical
    "is there a therapy for my bad knee",
])
def test_clinical_patterns(text):
    assert RULES.check_clinical(fold(text)) is not None


@pytest.mark.parametrize("text", [
    "Can I drink water before my blood test?",
    "Skal jeg ta med medisinlisten min til timen?",
    "Can I get an interpreter for my appointment?",
    "I don't have any symptoms, I just want my yearly check-up",
    # the bokmål medication forms above, in their logistics senses
    "Jeg glemte å ta med henvisningen, går det bra?",
    "Hva kan jeg ta med meg inn på undersøkelsen?",
    "Hvor mange timer kan jeg bestille om dagen?",
    "Hvor mange timer kan jeg få om dagen?",
    # "is that ok" asks about a plan, not a finding
    "I'm going to be 15 minutes late, is that ok?",
    # something done to a booking, not a finding
    "Could my appointment be moved to Friday?",
    "Could my follow-up be done over the phone?",
    "Kan timen min være på mandag i stedet?",
    "Kan kontrollen være digital?",
    # a procedure beside a companion, a time or a referral
    "Can I have an MRI with my husband in the room?",
    "Can I get a scan if I have a referral from my GP?",
    "Kan jeg ta MR med mannen min til stede?",
    # a knee that swells after exercise is no anaphylaxis (the face, lips or throat would be)
    "fysioterapeuten ga meg øvelser for kneet men det hovner opp etter hver gang",
    "my ankle keeps swelling up after physio, can I move the next session?",
    # notice given to someone, a child's fee, a missed visit because of vomiting last week
    "how much notice do i need to give my physio?",
    "How much does it cost to give my son a flu jab?",
    "I was sick last week so I missed my appointment, can I rebook?",
    "my daughter got into the wrong car park, where is the entrance?",
    # a therapy named as the appointment (Aspen Ridge q18)
    "what should i wear to physical therapy for my knee?",
    "is occupational therapy for kids on the ground floor?",
])
def test_logistics_is_not_clinical_by_rule(text):
    assert RULES.check_clinical(fold(text)) is None
    assert RULES.check_emergency(fold(text)).hit is None


@pytest.mark.parametrize("text", [
    "what does a crown cost",
    "how much does cataract surgery cost if i'm paying for it myself?",
    "is the sleep study covered by my insurance",
    "is there a fee for the allergy test results call",
    "is the hearing test free for pensioners",
    "hva koster en rotfylling",
    "må jeg betale egenandel for røntgen av håndleddet",
])
def test_a_question_of_money_about_a_clinical_thing_asks_only_money(text):
    assert RULES.asks_only_money(fold(text))


@pytest.mark.parametrize("text", [
    # advice beside the money, a dose, pain-free as no price, covering a wound, a clinical rule's question
    "is it worth paying for a crown or do i really need one",
    "how much paracetamol can i take after my extraction",
    "will i be pain free after the surgery",
    "should i cover my eye after the cataract operation",
    "does a root canal hurt, and what does it cost",
    "er det farlig å betale for laser, bør jeg ta det",
])
def test_advice_beside_money_is_not_only_money(text):
    assert not RULES.asks_only_money(fold(text))


@pytest.mark.parametrize("text,price", [
    ("how much is the first menopause appointment, and then the follow ups?", True),
    ("whats the fee for a coil fitting", True),
    ("hva koster en time hos gynekologen?", True),
    ("how much is the scan and can i book it for friday?", False),
    ("any appointments available next week?", False),
    # something said to cost nothing (the Tōtara probe's q22 got slots for "I thought under-14s were free?")
    ("I thought under-14s were free?", True),
    ("is it free for kids?", True),
    ("are you free on Tuesday", False),  # someone free, not something
    ("is the doctor free tomorrow", False),
    ("are any of the nurses free today", False),
    ("is there a free slot next week", False),
])
def test_a_price_is_no_booking_unless_it_asks_to_book(text, price):
    assert RULES.asks_price_not_booking(fold(text)) is price


@pytest.mark.parametrize("text,feeling", [
    ("i get really nervous", True),
    ("He's the nervous type lol", True),
    ("I get woozy with needles", True),
    ("she is scared of needles", True),
    ("i feel faint", False),  # a symptom, not a feeling about the visit
    ("i get woozy", False),
    ("i get nervous and have chest pain", False),
    ("i have been feeling anxious since this morning", False),
    ("i am anxious about my biopsy results, are they bad?", False),
])
def test_only_a_feeling_about_the_visit(text, feeling):
    assert RULES.only_a_feeling(fold(text)) is feeling
