#include "eval/ruler/word_lists.h"

#include <algorithm>
#include <sstream>

namespace mkv::eval::ruler {
namespace {

std::vector<std::string> split_words(const char* text) {
  std::istringstream in(text);
  std::vector<std::string> words;
  for (std::string word; in >> word;) words.push_back(word);
  return words;
}

constexpr const char* kAdjectives = R"(
able absent acid active afraid ancient angry anxious aware awful bad basic beautiful big bitter
black blue bold bored brave brief bright broad broken brown busy calm careful cheap cheerful chief
clean clear clever close cloudy cold common complete cool crazy creepy cruel curious curly cute
damp dark dead deep delicate dirty dizzy dry dull dusty eager early easy elegant empty equal even
exact excited faint fair faithful false famous fancy fast fat fierce fine firm flat fluffy foolish
fragile free fresh friendly full funny gentle giant glad golden good grand gray great green grumpy
guilty happy hard harsh healthy heavy helpful hidden high hollow honest hot huge humble hungry icy
idle jolly kind large late lazy light little lively lonely long loose loud lovely low loyal lucky
mad magic major mellow messy mighty mild minor modern moist narrow nasty neat nervous new nice noisy
normal odd old open orange pale patient plain pleasant plump polite poor popular proud purple quick
quiet rapid rare raw ready real red rich rigid ripe rough round royal rude rural rusty sad safe
salty scary sharp shiny short shy silent silly simple sleepy slim slow small smart smooth soft solid
sour spare spicy square steady steep sticky stiff still strange strict strong sturdy sudden sweet
swift tall tame tender thick thin tidy tiny tired tough true ugly unique upset urban useful vast
violet vivid warm weak wealthy weary wet white whole wide wild wise witty wooden yellow young zealous
)";

constexpr const char* kNouns = R"(
actor airport album anchor animal apple apron arch army arrow artist attic avenue baby badge bag
bakery ball balloon banana band bank barn basket bath beach bean bear bed bee bell belt bench berry
bicycle bird blanket boat bone book boot bottle box bread brick bridge brush bucket building butter
button cabin cable cake camera camp candle canoe canvas captain car card carpet carrot castle cat
cave chair chalk cheese cherry chest chicken chimney church circle city cliff clock cloud coat
coffee coin comet cookie corner cotton cousin cow crab crayon crown cup curtain cushion daisy desk
diamond dinner doctor dog doll dolphin door dragon drawer dream drum duck eagle earth egg elephant
engine envelope eraser fabric factory farm feather fence field finger fire fish flag flower flute
forest fork fountain fox frog garden gate ghost gift giraffe glass glove goat grape guitar hammer
harbor hat hill horse hospital house island jacket jar jewel kettle key kitchen kite knife ladder
lake lamp lantern leaf lemon letter library lion lizard lock map market meadow mirror monkey moon
mountain mouse mug museum nail napkin necklace needle nest net notebook ocean office onion orchard
owl oyster paint palace pan panda paper parrot pear pebble pen pencil pepper piano picture pillow
pilot pizza planet plate pocket pond potato puppet queen rabbit radio rain ribbon ring river road
robot rocket roof room rope rose sail salad sand saucer school scissors sea seed shadow sheep shell
ship shirt shoe shop shovel silver sister skirt sky snail snake sock sofa soup spoon square star
station statue stone storm street sugar suitcase sun table teacher temple tent thread throne ticket
tiger toast tomato tower town toy tractor train tree truck trumpet tunnel turtle umbrella valley
vase village violin wagon wall wallet watch water wheel whistle window wolf wool yard zebra
)";

constexpr const char* kVerbs = R"(
accept add admire agree allow answer appear arrange arrive ask attach bake balance bathe beg begin
behave believe belong bless blink boil borrow bounce breathe build bury calculate call camp carry
carve catch celebrate change chase check cheer chew choose clap climb collect comb compare complain
cook copy count cover crawl cross cry dance decide deliver describe dig dive divide draw dream drink
drive drop earn eat enjoy enter escape explain explore fetch fill find fix float fly fold follow
forget gather giggle glow grab greet grow guess hammer hang help hide hike hop hug hum hunt hurry
imagine invent invite iron jog join juggle jump kick kneel knit knock laugh lead learn lift listen
march melt mend mix move nod notice obey offer open order pack paddle paint park pause pick plant
play polish pour pray preach press print promise pull push race rain reach read relax remember
repair rescue rest return ride ring roll row run rush sail scatter scrub search serve sew shake
share shiver shout sing sip sit skate ski skip sleep slide smile sneeze sniff snore spell spill
spin splash stamp stare start steer stir stretch swim swing talk taste teach tease thank throw
tickle travel trust tumble turn type unlock unpack vanish visit wait walk wander wash watch wave
weave whisper whistle wiggle wink wish work worry wrap write yawn yell zoom
)";

}  // namespace

const std::vector<std::string>& adjectives() {
  static const std::vector<std::string> words = split_words(kAdjectives);
  return words;
}

const std::vector<std::string>& nouns() {
  static const std::vector<std::string> words = split_words(kNouns);
  return words;
}

const std::vector<std::string>& verbs() {
  static const std::vector<std::string> words = split_words(kVerbs);
  return words;
}

const std::vector<std::string>& common_words() {
  static const std::vector<std::string> words = [] {
    std::vector<std::string> all = nouns();
    all.insert(all.end(), adjectives().begin(), adjectives().end());
    all.insert(all.end(), verbs().begin(), verbs().end());
    std::sort(all.begin(), all.end());
    all.erase(std::unique(all.begin(), all.end()), all.end());
    return all;
  }();
  return words;
}

}  // namespace mkv::eval::ruler
